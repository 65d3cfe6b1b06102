//! [`MetricsText`]: a builder of the Prometheus text exposition format (0.0.4), shared by
//! the gateway's and the zone nodes' `/metrics`, and [`Histogram`], the lock-free
//! fixed-bucket histogram both record durations in. No clock: callers pass durations.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

    /// A counter whose value is not a whole number (`process_cpu_seconds_total`).
    pub fn counter_float(&mut self, name: &str, help: &str, value: f64) -> &mut Self {
        self.sample(name, help, Kind::Counter, &[], &float(value))
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

    /// A histogram with no labels (see [`histogram_with`](Self::histogram_with)).
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) -> &mut Self {
        self.histogram_with(name, help, &[], buckets, sum, count)
    }

    /// One series of a histogram family: `buckets` are `(upper bound, cumulative count)`
    /// in increasing order (the `+Inf` bucket is added from `count`); `le` follows
    /// `labels`. Several calls with other labels add series to the same family.
    pub fn histogram_with(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) -> &mut Self {
        let base = sanitize(name, true);
        let Some(f) = self.family(&base, help, Kind::Histogram) else {
            return self;
        };
        let s = &mut f.samples;
        let bucket = format!("{base}_bucket");
        for (le, n) in buckets {
            line(s, &bucket, labels, Some(&float(*le)), &n.to_string());
        }
        line(s, &bucket, labels, Some("+Inf"), &count.to_string());
        line(s, &format!("{base}_sum"), labels, None, &float(sum));
        line(
            s,
            &format!("{base}_count"),
            labels,
            None,
            &count.to_string(),
        );
        self
    }

    /// A [`Histogram`]'s current state as one series.
    pub fn histogram_of(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        h: &Histogram,
    ) -> &mut Self {
        let snap = h.snapshot();
        self.histogram_with(name, help, labels, &snap.buckets, snap.sum, snap.count)
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
        if let Some(f) = self.family(&name, help, kind) {
            line(&mut f.samples, &name, labels, None, value);
        }
        self
    }

    /// The family `name` (already sanitized), created with `help` and `kind` on first use.
    fn family(&mut self, name: &str, help: &str, kind: Kind) -> Option<&mut Family> {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.families.len();
                self.families.push(Family {
                    name: name.to_owned(),
                    help: escape_help(help),
                    kind,
                    samples: String::new(),
                });
                self.index.insert(name.to_owned(), i);
                i
            }
        };
        self.families.get_mut(i)
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

/// Append one sample line: `name{labels,le="…"} value`.
fn line(s: &mut String, name: &str, labels: &[(&str, &str)], le: Option<&str>, value: &str) {
    s.push_str(name);
    if !labels.is_empty() || le.is_some() {
        s.push('{');
        let le = le.map(|v| ("le", v));
        for (n, (label, v)) in labels.iter().copied().chain(le).enumerate() {
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

/// One counter series as a binary declares it with [`counters!`](crate::counters): its
/// family, its labels and the counter.
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// The family's name (one of the binary's families).
    pub family: &'static str,
    /// The series' labels.
    pub labels: &'static [(&'static str, &'static str)],
    /// The counter.
    pub counter: &'a AtomicU64,
}

/// The help of `family` in `families` (`(name, help)`; empty when it is not there).
pub fn family_help<'a>(families: &[(&str, &'a str)], family: &str) -> &'a str {
    families
        .iter()
        .find(|(name, _)| *name == family)
        .map_or("", |(_, help)| *help)
}

/// Renders `series` into `t`, each with its family's help from `families` (`(name, help)`).
pub fn render_series(t: &mut MetricsText, families: &[(&str, &str)], series: &[Series<'_>]) {
    for s in series {
        let help = family_help(families, s.family);
        t.counter_with(s.family, help, s.labels, s.counter.load(Ordering::Relaxed));
    }
}

/// What is wrong with a binary's declaration (none when all holds): a series whose family
/// is not in `families`, a family declared twice or with no series (`rendered_elsewhere`
/// names families rendered by other code), two series with the same family and labels.
pub fn declaration_errors(
    families: &[(&str, &str)],
    series: &[Series<'_>],
    rendered_elsewhere: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    for s in series {
        if !families.iter().any(|(n, _)| *n == s.family) {
            out.push(format!("{} has no entry in the families", s.family));
        }
    }
    for (i, (name, help)) in families.iter().enumerate() {
        if families.iter().skip(i + 1).any(|(n, _)| n == name) {
            out.push(format!("{name} is declared twice"));
        }
        if help.trim().is_empty() {
            out.push(format!("{name} has no help"));
        }
        if !series.iter().any(|s| s.family == *name) && !rendered_elsewhere.contains(name) {
            out.push(format!("{name} has no series"));
        }
    }
    for (i, s) in series.iter().enumerate() {
        if series
            .iter()
            .skip(i + 1)
            .any(|o| o.family == s.family && o.labels == s.labels)
        {
            out.push(format!("{} {:?} is declared twice", s.family, s.labels));
        }
    }
    out
}

/// Declares a binary's counters once: a struct with one `AtomicU64` per series, each field
/// written with its family and labels, and a `series()` listing them for
/// [`render_series`]. Fields after `extra` are other state of the struct (histograms,
/// arrays) that the binary renders itself.
///
/// ```
/// use shared::metrics_text::{MetricsText, render_series};
/// shared::counters! {
///     /// Counters of an example.
///     pub struct Example {
///         /// Logins.
///         logins => "ex_logins_total";
///         /// Refused: bad password.
///         bad => "ex_refused_total" ["reason" = "bad_password"];
///     }
/// }
/// let m = Example::default();
/// m.logins.fetch_add(2, std::sync::atomic::Ordering::Relaxed);
/// let mut t = MetricsText::new();
/// render_series(&mut t, &[("ex_logins_total", "Logins."), ("ex_refused_total", "Refused.")], &m.series());
/// assert!(t.render().contains("ex_logins_total 2\n"));
/// assert!(t.render().contains("ex_refused_total{reason=\"bad_password\"} 0\n"));
/// ```
#[macro_export]
macro_rules! counters {
    (
        $(#[$smeta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident => $family:literal $([$($label:literal = $value:literal),+])?;
            )*
        }
        $(extra {
            $( $(#[$emeta:meta])* $efield:ident : $ety:ty, )*
        })?
    ) => {
        $(#[$smeta])*
        #[derive(Debug, Default)]
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: ::std::sync::atomic::AtomicU64,
            )*
            $($(
                $(#[$emeta])*
                pub $efield: $ety,
            )*)?
        }

        impl $name {
            /// Every counter with its family and labels, in declaration order.
            pub fn series(&self) -> ::std::vec::Vec<$crate::metrics_text::Series<'_>> {
                ::std::vec![$(
                    $crate::metrics_text::Series {
                        family: $family,
                        labels: &[$($(($label, $value)),+)?],
                        counter: &self.$field,
                    }
                ),*]
            }
        }
    };
}

/// The naming rules every family this project exports keeps (Prometheus' own conventions,
/// <https://prometheus.io/docs/practices/naming/>), checked over an exposition `text` as
/// served: one message per broken rule, none when all hold.
///
/// - counters end in `_total`, and nothing else does;
/// - histograms are in a base unit (`_seconds` or `_bytes`); no name spells a scaled unit
///   (`_ms`, `_milliseconds`, `_us`, `_kb`, `_mb`);
/// - no family's name is another family's sample (`x_count` beside a histogram `x`, or `x`
///   beside `x_total`), and a family's samples are only its own;
/// - no label is one Prometheus attaches itself (`instance`, `job`) or reserves (`__*`, `le`
///   outside histograms, `quantile`);
/// - every family has a `# HELP` and a `# TYPE`, once.
///
/// ```
/// # use shared::metrics_text::{MetricsText, lint};
/// let mut m = MetricsText::new();
/// m.counter("logins", "Logins.", 1);
/// m.gauge_with("players", "Players.", &[("instance", "0")], 2.0);
/// assert_eq!(lint(&m.render()).len(), 2);
/// ```
pub fn lint(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut kinds: HashMap<String, String> = HashMap::new();
    let mut helped: HashMap<String, u32> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let at = n + 1;
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if help.trim().is_empty() {
                out.push(format!("line {at}: {name} has an empty HELP"));
            }
            *helped.entry(name.to_owned()).or_default() += 1;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            if kinds.insert(name.to_owned(), kind.to_owned()).is_some() {
                out.push(format!("line {at}: {name} has a second TYPE"));
            }
            order.push(name.to_owned());
            current = Some((name.to_owned(), kind.to_owned()));
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (name, labels) = match sample_head(line) {
            Ok(v) => v,
            Err(e) => {
                out.push(format!("line {at}: {e}"));
                continue;
            }
        };
        let Some((family, kind)) = &current else {
            out.push(format!("line {at}: sample {name} before any TYPE"));
            continue;
        };
        let own = if kind == "histogram" {
            ["_bucket", "_sum", "_count"]
                .iter()
                .any(|s| name.strip_suffix(s) == Some(family.as_str()))
        } else {
            name == *family
        };
        if !own {
            out.push(format!("line {at}: sample {name} inside family {family}"));
        }
        for label in labels {
            let bucket_le = label == "le" && kind == "histogram" && name.ends_with("_bucket");
            if label == "instance" || label == "job" {
                out.push(format!(
                    "line {at}: {name} has the label `{label}`, which Prometheus sets itself"
                ));
            } else if label.starts_with("__")
                || label == "quantile"
                || (label == "le" && !bucket_le)
            {
                out.push(format!(
                    "line {at}: {name} has the reserved label `{label}`"
                ));
            }
        }
    }
    for name in &order {
        let kind = kinds.get(name).map_or("", String::as_str);
        if helped.get(name).copied().unwrap_or(0) != 1 {
            out.push(format!("{name}: wants exactly one HELP"));
        }
        match kind {
            "counter" if !name.ends_with("_total") => {
                out.push(format!("{name}: a counter's name ends in _total"));
            }
            "counter" => {}
            _ if name.ends_with("_total") => {
                out.push(format!("{name}: only counters end in _total ({kind})"));
            }
            "histogram" if !(name.ends_with("_seconds") || name.ends_with("_bytes")) => {
                out.push(format!("{name}: a histogram is in seconds or bytes"));
            }
            "gauge" | "histogram" | "untyped" => {}
            other => out.push(format!("{name}: unknown type {other:?}")),
        }
        let scaled = ["_ms", "_milliseconds", "_us", "_microseconds", "_kb", "_mb"];
        if scaled
            .iter()
            .any(|u| name.ends_with(u) || name.contains(&format!("{u}_")))
        {
            out.push(format!("{name}: use base units (seconds, bytes)"));
        }
        let mut clashes: Vec<String> = vec![format!("{name}_total")];
        if kind == "histogram" {
            clashes.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}")));
        }
        for c in clashes {
            if kinds.contains_key(&c) {
                out.push(format!("{c}: clashes with the family {name}"));
            }
        }
    }
    out
}

/// A sample line's metric name and label names.
fn sample_head(line: &str) -> Result<(String, Vec<String>), String> {
    let end = line
        .find(['{', ' '])
        .ok_or_else(|| format!("no value in {line:?}"))?;
    let name = line.get(..end).unwrap_or_default().to_owned();
    let mut labels = Vec::new();
    let rest = line.get(end..).unwrap_or_default();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.chars();
        loop {
            let label: String = chars.by_ref().take_while(|c| *c != '=').collect();
            let label = label.trim_start_matches(',').trim().to_owned();
            if label.is_empty() || label.starts_with('}') {
                break;
            }
            if chars.next() != Some('"') {
                return Err(format!("label {label} of {name} is not quoted"));
            }
            let mut escaped = false;
            let mut closed = false;
            for c in chars.by_ref() {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        closed = true;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            if !closed {
                return Err(format!("label {label} of {name} is not closed"));
            }
            labels.push(label);
        }
    }
    Ok((name, labels))
}

/// A lock-free histogram of durations with fixed bucket bounds (seconds): `observe` is a
/// few relaxed atomic adds, cheap enough for every tick of every instance.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Box<[AtomicU64]>,
    count: AtomicU64,
    sum_ns: AtomicU64,
}

/// A [`Histogram`]'s state in the exposition's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound in seconds, cumulative count)` per bucket, in increasing order.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the observations, seconds.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    /// Bounds for network latencies: 1 ms to 5 s.
    pub const LATENCY: &'static [f64] = &[
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
    ];
    /// Bounds for work inside one 33 ms tick: 10 µs to 100 ms.
    pub const TICK: &'static [f64] = &[
        0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01,
        0.02, 0.033, 0.05, 0.1,
    ];
    /// Bounds for a disk write: 100 µs to 5 s.
    pub const DISK: &'static [f64] = &[
        0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
        5.0,
    ];

    /// An empty histogram over `bounds` (increasing upper bounds, seconds).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Record one duration.
    pub fn observe(&self, d: Duration) {
        self.observe_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Record one duration given in nanoseconds.
    pub fn observe_ns(&self, ns: u64) {
        let secs = ns as f64 / 1e9;
        if let Some(i) = self.bounds.iter().position(|b| secs <= *b)
            && let Some(c) = self.counts.get(i)
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Number of observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The cumulative buckets, the sum and the count.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut acc = 0;
        let buckets = self
            .bounds
            .iter()
            .zip(self.counts.iter())
            .map(|(b, c)| {
                acc += c.load(Ordering::Relaxed);
                (*b, acc)
            })
            .collect();
        HistogramSnapshot {
            buckets,
            sum: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

impl Default for Histogram {
    /// An empty histogram over [`Histogram::LATENCY`].
    fn default() -> Self {
        Self::new(Self::LATENCY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_overflow_counts_only_in_inf() {
        let h = Histogram::new(&[0.001, 0.01]);
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_secs(1));
        let s = h.snapshot();
        assert_eq!(s.buckets, vec![(0.001, 1), (0.01, 3)]);
        assert_eq!(s.count, 4);
        assert!((s.sum - 1.0105).abs() < 1e-9, "{}", s.sum);
    }

    #[test]
    fn labelled_histograms_share_one_family() {
        let h = Histogram::new(&[0.5]);
        h.observe(Duration::from_millis(250));
        let mut m = MetricsText::new();
        m.histogram_of("t_seconds", "Tick.", &[("phase", "ai")], &h);
        m.histogram_of(
            "t_seconds",
            "Tick.",
            &[("phase", "io\"x")],
            &Histogram::new(&[0.5]),
        );
        m.counter("after_total", "After.", 1);
        assert_eq!(
            m.render(),
            "# HELP t_seconds Tick.\n# TYPE t_seconds histogram\n\
             t_seconds_bucket{phase=\"ai\",le=\"0.5\"} 1\n\
             t_seconds_bucket{phase=\"ai\",le=\"+Inf\"} 1\n\
             t_seconds_sum{phase=\"ai\"} 0.25\n\
             t_seconds_count{phase=\"ai\"} 1\n\
             t_seconds_bucket{phase=\"io\\\"x\",le=\"0.5\"} 0\n\
             t_seconds_bucket{phase=\"io\\\"x\",le=\"+Inf\"} 0\n\
             t_seconds_sum{phase=\"io\\\"x\"} 0\n\
             t_seconds_count{phase=\"io\\\"x\"} 0\n\
             # HELP after_total After.\n# TYPE after_total counter\nafter_total 1\n"
        );
    }

    #[test]
    fn an_unlabelled_histogram_has_only_le() {
        let mut m = MetricsText::new();
        m.histogram("h", "", &[(1.0, 2)], 1.5, 3);
        assert_eq!(
            m.render(),
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1.5\nh_count 3\n"
        );
    }

    #[test]
    fn lint_passes_what_follows_the_conventions() {
        let mut m = MetricsText::new();
        m.counter_with("a_total", "A.", &[("reason", "x,\"}y")], 1);
        m.gauge_with("b", "B.", &[("area", "P"), ("area_instance", "0")], 1.0);
        m.histogram_of(
            "c_seconds",
            "C.",
            &[("phase", "ai")],
            &Histogram::new(&[0.5]),
        );
        assert_eq!(lint(&m.render()), Vec::<String>::new());
    }

    #[test]
    fn lint_names_every_broken_rule() {
        let mut m = MetricsText::new();
        m.counter("logins", "Logins.", 1);
        m.gauge("players_total", "Players.", 1.0);
        m.histogram("tick_ms", "Tick.", &[(1.0, 1)], 1.0, 1);
        m.gauge("tick_ms_count", "Clash.", 1.0);
        m.gauge_with("p", "", &[("instance", "0"), ("job", "x")], 1.0);
        m.counter("q_total", "Q.", 1);
        m.counter("q_total_total", "Q twice.", 1);
        let found = lint(&m.render());
        for want in [
            "logins: a counter's name ends in _total",
            "players_total: only counters end in _total (gauge)",
            "tick_ms: a histogram is in seconds or bytes",
            "tick_ms: use base units (seconds, bytes)",
            "tick_ms_count: clashes with the family tick_ms",
            "q_total_total: clashes with the family q_total",
            "p: wants exactly one HELP",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
        }
        assert!(found.iter().any(|f| f.contains("`instance`")), "{found:#?}");
        assert!(found.iter().any(|f| f.contains("`job`")), "{found:#?}");
        assert!(
            lint("x 1\n# TYPE y gauge\n# HELP y Y.\nz 2\ny{a=\"1} 3\n")
                .iter()
                .filter(|f| f.starts_with("line"))
                .count()
                >= 3
        );
    }
}
