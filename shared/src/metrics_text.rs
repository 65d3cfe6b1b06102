//! [`MetricsText`]: a builder of the Prometheus text exposition format (0.0.4), shared by
//! the gateway's and the zone nodes' `/metrics`. Pure string building.

use std::collections::HashMap;
use std::fmt::{self, Write as _};

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

#[derive(Debug, Clone)]
struct Family {
    name: String,
    help: String,
    kind: Kind,
    /// Rendered sample lines, each ending in `\n`.
    samples: String,
}

/// A builder of Prometheus text exposition format 0.0.4.
///
/// Samples are grouped by metric family in the order each family was first used, with one
/// `# HELP` and one `# TYPE` line per family, however the calls interleave; the first call
/// of a family fixes its help and type. Names are made valid by replacing every character
/// outside `[a-zA-Z0-9_:]` (label names: `[a-zA-Z0-9_]`) with `_` and prefixing `_` to a
/// leading digit; label values and help are escaped as the format requires.
///
/// ```
/// # use shared::metrics_text::MetricsText;
/// let mut m = MetricsText::new();
/// m.counter("gw_logins_total", "Successful logins.", 3);
/// m.gauge_with("gw_players", "Players per area.", &[("area", "Plains")], 2.0);
/// assert_eq!(
///     m.render(),
///     "# HELP gw_logins_total Successful logins.\n# TYPE gw_logins_total counter\n\
///      gw_logins_total 3\n# HELP gw_players Players per area.\n# TYPE gw_players gauge\n\
///      gw_players{area=\"Plains\"} 2\n"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct MetricsText {
    families: Vec<Family>,
    index: HashMap<String, usize>,
}

impl MetricsText {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter sample with no labels.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) -> &mut Self {
        self.counter_with(name, help, &[], value)
    }

    /// A counter sample with labels.
    pub fn counter_with(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: u64,
    ) -> &mut Self {
        self.sample(name, help, Kind::Counter, labels, &value.to_string())
    }

    /// A gauge sample with no labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) -> &mut Self {
        self.gauge_with(name, help, &[], value)
    }

    /// A gauge sample with labels.
    pub fn gauge_with(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: f64,
    ) -> &mut Self {
        self.sample(name, help, Kind::Gauge, labels, &float(value))
    }

    /// A histogram with no labels: `buckets` are `(upper bound, cumulative count)` in
    /// increasing order (the `+Inf` bucket is added from `count`).
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) -> &mut Self {
        let base = sanitize(name, true);
        self.sample(&base, help, Kind::Histogram, &[], "");
        let mut text = String::new();
        for (le, n) in buckets {
            let _ = writeln!(text, "{base}_bucket{{le=\"{}\"}} {n}", float(*le));
        }
        let _ = writeln!(text, "{base}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(text, "{base}_sum {}", float(sum));
        let _ = writeln!(text, "{base}_count {count}");
        if let Some(f) = self
            .index
            .get(&base)
            .copied()
            .and_then(|i| self.families.get_mut(i))
        {
            f.samples = text;
        }
        self
    }

    fn sample(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        labels: &[(&str, &str)],
        value: &str,
    ) -> &mut Self {
        let name = sanitize(name, true);
        let i = match self.index.get(&name) {
            Some(&i) => i,
            None => {
                let i = self.families.len();
                self.families.push(Family {
                    name: name.clone(),
                    help: escape_help(help),
                    kind,
                    samples: String::new(),
                });
                self.index.insert(name.clone(), i);
                i
            }
        };
        if let Some(f) = self.families.get_mut(i) {
            let s = &mut f.samples;
            s.push_str(&name);
            if !labels.is_empty() {
                s.push('{');
                for (n, (label, v)) in labels.iter().enumerate() {
                    if n > 0 {
                        s.push(',');
                    }
                    s.push_str(&sanitize(label, false));
                    s.push_str("=\"");
                    s.push_str(&escape_label_value(v));
                    s.push('"');
                }
                s.push('}');
            }
            s.push(' ');
            s.push_str(value);
            s.push('\n');
        }
        self
    }

    /// The exposition text (empty when nothing was added).
    pub fn render(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for MetricsText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for fam in &self.families {
            if !fam.help.is_empty() {
                writeln!(f, "# HELP {} {}", fam.name, fam.help)?;
            }
            writeln!(f, "# TYPE {} {}", fam.name, fam.kind.as_str())?;
            f.write_str(&fam.samples)?;
        }
        Ok(())
    }
}

/// A float as the format spells it (`NaN`, `+Inf`, `-Inf`, else the shortest decimal).
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v == f64::INFINITY {
        "+Inf".to_owned()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        let mut s = String::new();
        let _ = write!(s, "{v}");
        s
    }
}

/// A valid metric name (`colons`) or label name.
fn sanitize(name: &str, colons: bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for (i, c) in name.chars().enumerate() {
        if i == 0 && c.is_ascii_digit() {
            out.push('_');
        }
        let ok = c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':');
        out.push(if ok { c } else { '_' });
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// `\` → `\\`, newline → `\n`.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// `\` → `\\`, `"` → `\"`, newline → `\n`.
fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}
