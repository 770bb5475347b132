//! "Did you mean": the declared name closest to a misspelt one, for every
//! place that checks names against a declaration (workload parameters,
//! server settings, choices).

/// Edit distance between two short words (Levenshtein).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// The declared name closest to `key`, if it is close enough to be a typo.
pub fn did_you_mean<'d>(key: &str, names: impl Iterator<Item = &'d str>) -> Option<&'d str> {
    names
        .map(|n| (distance(key, n), n))
        .filter(|&(d, n)| d <= 2.max(n.len() / 4) || n.contains(key) || key.contains(n))
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn a_typo_finds_its_name_and_nonsense_finds_none() {
        let names = ["clients", "threads", "pipeline"];
        assert_eq!(did_you_mean("client", names.into_iter()), Some("clients"));
        assert_eq!(did_you_mean("pipelin", names.into_iter()), Some("pipeline"));
        assert_eq!(did_you_mean("zzzzzzzz", names.into_iter()), None);
    }
}
