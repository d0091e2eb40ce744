//! Parsing of list flags such as `--threads 1,2,4` or `--cores 1..48`.

/// A parsed list flag. A newtype because clap reads a bare `Vec<u32>` field
/// as "the flag may repeat", not as one list value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts(pub Vec<u32>);

impl std::ops::Deref for Counts {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.0
    }
}

/// Parses a list of positive integers: comma-separated items, each a number
/// `N` or an inclusive range `A..B` (also `A..=B`). Used as a clap
/// `value_parser`, so the error text is what clap prints after naming the
/// flag and the value.
pub fn parse_count_list(s: &str) -> Result<Counts, String> {
    const ALLOWED: &str = "expected positive integers like '4', '1,2,8' or a range '1..48'";
    let mut out = Vec::new();
    if s.trim().is_empty() {
        return Err(format!("empty list; {ALLOWED}"));
    }
    for item in s.split(',') {
        let item = item.trim();
        let parse = |t: &str| -> Result<u32, String> {
            let v: u32 = t
                .trim()
                .parse()
                .map_err(|_| format!("'{t}' is not a number; {ALLOWED}"))?;
            if v == 0 {
                return Err(format!("0 is not allowed; {ALLOWED}"));
            }
            Ok(v)
        };
        if let Some((a, b)) = item.split_once("..") {
            let b = b.strip_prefix('=').unwrap_or(b);
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b {
                return Err(format!("range '{item}' runs backwards; {ALLOWED}"));
            }
            if b - a > 1_000_000 {
                return Err(format!(
                    "range '{item}' is too long (over a million points)"
                ));
            }
            out.extend(a..=b);
        } else {
            out.push(parse(item)?);
        }
    }
    Ok(Counts(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_and_ranges() {
        assert_eq!(parse_count_list("1,2,4").unwrap().0, vec![1, 2, 4]);
        assert_eq!(parse_count_list("1..4").unwrap().0, vec![1, 2, 3, 4]);
        assert_eq!(parse_count_list("2..=3,8").unwrap().0, vec![2, 3, 8]);
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in ["", "0", "1,,2", "x", "4..1", "1..", "-3"] {
            assert!(parse_count_list(bad).is_err(), "{bad} accepted");
        }
    }
}
