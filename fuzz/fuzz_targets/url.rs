//! Target URLs and names as `--target` takes them (`redis://`,
//! `memcached://h1:p1,h2:p2`, `name[key=value]`, comma-separated lists):
//! split, parsed and checked by `Plan::build` against the driver registry,
//! and `redact`, which hides the password wherever a URL is shown.
//!
//! Input: the text of one `--target` value.
#![no_main]

use bakeoff_core::plan::{redact, Endpoint, Overrides, Plan};
use bakeoff_drivers::nodes::external_nodes;
use bakeoff_drivers::registry::Registry;
use bakeoff_fuzz::check_plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Arguments are UTF-8 (clap's String values).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let shown = redact(text);
    assert_eq!(redact(&shown), shown, "redact is not idempotent");

    let flags = Overrides {
        targets: vec![text.to_string()],
        ..Overrides::default()
    };
    let plan = match Plan::build(None, &flags, &Registry) {
        Ok(plan) => plan,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    check_plan(&plan);
    for t in &plan.targets {
        let _ = external_nodes(t);
        let Endpoint::External {
            url,
            host,
            options,
            more,
            ..
        } = &t.endpoint
        else {
            continue;
        };
        assert!(!host.is_empty() && more.iter().all(|(h, _)| !h.is_empty()));
        assert_eq!(&redact(url), url);
        // The password is not in the URL shown. Checked where the text
        // holds it once, as written, and nothing else shown holds it.
        let Some(p) = t.password.as_deref() else {
            continue;
        };
        let elsewhere = p.is_empty()
            || p.contains('*')
            || text.matches(p).count() != 1
            || host.contains(p)
            || more.iter().any(|(h, _)| h.contains(p))
            || t.user.as_deref().is_some_and(|u| u.contains(p))
            || options.iter().any(|(k, v)| k.contains(p) || v.contains(p));
        if !elsewhere {
            assert!(!url.contains(p), "password {p:?} shown in {url:?}");
        }
    }
});
