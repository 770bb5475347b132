//! Sweep axes and the matrix of points they make.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::params::param;
use super::Workload;

/// One axis of a sweep: a workload parameter and the values it takes.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepAxis {
    /// The parameter swept, by its preset key (`clients`, `value_size`).
    pub axis: String,
    /// Its values, as the workload's field records them.
    pub values: Vec<serde_json::Value>,
}

impl SweepAxis {
    /// The axis name as in presets and results.
    pub fn name(&self) -> &str {
        &self.axis
    }

    /// Applies value `i` of the axis to `w`; returns the value's label.
    fn apply(&self, i: usize, w: &mut Workload) -> String {
        match param(&self.axis) {
            Some(p) => {
                p.put(w, &self.values[i]);
                (p.show)(w)
            }
            // A result file of a later version: its axis is kept as written.
            None => self.values[i].to_string(),
        }
    }
}

/// One point of the matrix: the workload with the sweep values applied.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Sweep values of this point, by axis name (empty without a sweep).
    pub labels: BTreeMap<String, String>,
    /// The workload at this point.
    pub workload: Workload,
}

/// Every point of `base` swept over `axes`, in order (the first axis
/// outermost).
pub(super) fn expand(base: &Workload, axes: &[SweepAxis]) -> Vec<Point> {
    let mut points = vec![Point {
        labels: BTreeMap::new(),
        workload: base.clone(),
    }];
    for axis in axes {
        let mut next = Vec::with_capacity(points.len() * axis.values.len());
        for p in &points {
            for i in 0..axis.values.len() {
                let mut q = p.clone();
                let label = axis.apply(i, &mut q.workload);
                q.labels.insert(axis.axis.clone(), label);
                next.push(q);
            }
        }
        points = next;
    }
    for p in &mut points {
        // Threads serve clients; a point with fewer clients has fewer.
        p.workload.threads = p.workload.threads.min(p.workload.clients);
        // A trace sets its records, operations and rate (at each speed).
        p.workload.shape_to_trace();
    }
    if base.grow {
        // Each checkpoint adds the records beyond the previous one.
        for i in 1..points.len() {
            points[i].workload.load_from = points[i - 1].workload.records;
        }
    }
    points
}
