//! Findings in words (the head of `report`) and as JSON (`report --json`'s `findings`).

use std::fmt::Write;

use serde_json::Value;

use super::Finding;
use crate::format::format_ns;
use crate::trace::Trace;
use crate::trace::device_name;

pub fn findings_json(trace: &Trace, findings: &[Finding]) -> Value {
    Value::Array(
        findings
            .iter()
            .map(|f| {
                let mut v = serde_json::to_value(f).unwrap_or(Value::Null);
                v["devices"] = f.devices.iter().map(|&d| device_name(trace, d)).collect();
                v
            })
            .collect(),
    )
}

/// "What to fix first": one line per finding with its saving, then its evidence.
pub fn findings_text(findings: &[Finding]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "What to fix first:");
    if findings.is_empty() {
        let _ = writeln!(s, "  nothing: no detector found a change worth replaying");
    }
    for (i, f) in findings.iter().enumerate() {
        // Faults are listed first; opportunities and facts under a heading of their own.
        if f.group != super::Group::Fault
            && findings.get(i.wrapping_sub(1)).map(|p| p.group) != Some(f.group)
        {
            let _ = writeln!(s, "  {}:", f.group.label());
        }
        let saving = match (f.saving_ns, f.saving_pct) {
            (Some(ns), Some(pct)) => format!("saves {} ({pct:.1} %)", format_ns(ns)),
            _ => "no change proposed".to_string(),
        };
        let upper = f
            .upper_bound_ns
            .filter(|&u| Some(u) != f.saving_ns)
            .map_or(String::new(), |u| format!(", up to {}", format_ns(u)));
        let _ = writeln!(
            s,
            "  {}. [{}] {saving}{upper}: {}",
            i + 1,
            f.severity.label(),
            f.title
        );
        let _ = writeln!(s, "     {}", f.detail);
        if !f.what_if.is_empty() {
            let _ = writeln!(s, "     replay: {}", what_if_command(&f.what_if));
        }
    }
    s
}

/// The command that replays a finding's change, each argument quoted for a POSIX shell
/// where it needs it: what the report prints and the window copies.
pub fn what_if_command(args: &[String]) -> String {
    let words: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
    format!("nsys-explorer what-if FILE {}", words.join(" "))
}

/// `a` quoted for a POSIX shell where it needs it.
fn shell_word(a: &str) -> String {
    if !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_=.:/,@".contains(&b))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}
