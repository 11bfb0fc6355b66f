//! Answers that fit a model's context: a table's rows a page at a time with its total, and
//! any answer cut to [`MAX_BYTES`] of JSON (the rows dropped from the end, `truncated` set).

use serde_json::{Value, json};

/// The most JSON bytes an answer carries (a model's context is the budget).
pub const MAX_BYTES: usize = 20_000;

/// Rows a table returns unless asked for more, and the most it returns.
pub const DEFAULT_LIMIT: usize = 20;
pub const MOST: usize = 500;

/// `rows[offset..offset + limit]` under `key`, with the total, the offset and where the
/// next page starts (`null` at the end); cut further to fit [`MAX_BYTES`].
pub fn page(key: &str, rows: Vec<Value>, offset: usize, limit: Option<usize>) -> Value {
    let total = rows.len();
    let limit = limit.unwrap_or(DEFAULT_LIMIT).min(MOST);
    let rows: Vec<Value> = rows.into_iter().skip(offset).take(limit).collect();
    paged(key, rows, total, offset)
}

/// A page already taken: `rows` are the ones from `offset` of `total`.
pub fn paged(key: &str, mut rows: Vec<Value>, total: usize, offset: usize) -> Value {
    let mut truncated = offset + rows.len() < total;
    // Each row's share of the budget, the page's other fields aside.
    while rows.len() > 1 && serde_json::to_string(&rows).map_or(0, |s| s.len()) > MAX_BYTES - 500 {
        rows.truncate(rows.len() / 2);
        truncated = true;
    }
    let end = offset + rows.len();
    json!({
        "total": total,
        "offset": offset,
        "returned": rows.len(),
        "next_offset": (end < total).then_some(end),
        "truncated": truncated,
        key: rows,
    })
}

/// Arrays inside `value` cut to `limit` items each (a report's lists: findings' occurrences,
/// a path's segments), then, while the whole is over [`MAX_BYTES`], the longest array
/// halved; `truncated: true` added to an object cut.
pub fn fit(mut value: Value, limit: usize) -> Value {
    let mut cut = cut_arrays(&mut value, limit);
    while serde_json::to_string(&value).map_or(0, |s| s.len()) > MAX_BYTES - 100 {
        if !halve_longest(&mut value) {
            break;
        }
        cut = true;
    }
    if cut && let Some(o) = value.as_object_mut() {
        o.insert("truncated".into(), true.into());
    }
    value
}

fn cut_arrays(value: &mut Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => {
            let mut cut = items.len() > limit;
            items.truncate(limit);
            for item in items {
                cut |= cut_arrays(item, limit);
            }
            cut
        }
        Value::Object(map) => {
            // Every value cut, not only up to the first that was.
            let mut cut = false;
            for v in map.values_mut() {
                cut |= cut_arrays(v, limit);
            }
            cut
        }
        _ => false,
    }
}

/// Halves the array with the most JSON in `value`; false when none has two items.
fn halve_longest(value: &mut Value) -> bool {
    let mut best: Option<(usize, Vec<Step>)> = None;
    longest_array(value, &mut Vec::new(), &mut best);
    let Some((_, path)) = best else {
        return false;
    };
    let mut at = value;
    for step in path {
        at = match (step, at) {
            (Step::Key(k), Value::Object(map)) => map.get_mut(&k).expect("found there"),
            (Step::Index(i), Value::Array(items)) => &mut items[i],
            _ => return false,
        };
    }
    if let Value::Array(items) = at {
        items.truncate(items.len() / 2);
    }
    true
}

/// A step from a JSON value into one inside it.
enum Step {
    Key(String),
    Index(usize),
}

/// The path to the array of at least two items with the most JSON, and its size.
fn longest_array(value: &Value, path: &mut Vec<Step>, best: &mut Option<(usize, Vec<Step>)>) {
    match value {
        Value::Array(items) => {
            if items.len() > 1 {
                let n = serde_json::to_string(items).map_or(0, |s| s.len());
                if best.as_ref().is_none_or(|b| n > b.0) {
                    *best = Some((n, path.iter().map(Step::copy).collect()));
                }
            }
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                longest_array(item, path, best);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                longest_array(v, path, best);
                path.pop();
            }
        }
        _ => {}
    }
}

impl Step {
    fn copy(&self) -> Step {
        match self {
            Step::Key(k) => Step::Key(k.clone()),
            Step::Index(i) => Step::Index(*i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_says_where_the_next_starts_and_fits_the_budget() {
        let rows: Vec<Value> = (0..100).map(|i| json!({ "i": i })).collect();
        let p = page("rows", rows, 90, Some(20));
        assert_eq!(
            (p["total"].as_u64(), p["returned"].as_u64()),
            (Some(100), Some(10))
        );
        assert!(p["next_offset"].is_null());
        let big: Vec<Value> = (0..400)
            .map(|i| json!({ "text": "x".repeat(200), "i": i }))
            .collect();
        let p = page("rows", big, 0, Some(400));
        assert!(serde_json::to_string(&p).unwrap().len() <= MAX_BYTES);
        assert_eq!(p["truncated"], true);
        assert_eq!(p["next_offset"], p["returned"]);
    }

    #[test]
    fn fit_cuts_the_longest_lists_until_the_answer_fits() {
        let v =
            json!({ "a": (0..9000).collect::<Vec<_>>(), "b": [1, 2], "c": { "d": vec!["x"; 5] } });
        let f = fit(v, 10_000);
        assert!(serde_json::to_string(&f).unwrap().len() <= MAX_BYTES);
        assert_eq!(f["b"], json!([1, 2]));
        assert_eq!(f["truncated"], true);
        let small = fit(json!({ "a": [1, 2, 3] }), 2);
        assert_eq!(small, json!({ "a": [1, 2], "truncated": true }));
    }
}
