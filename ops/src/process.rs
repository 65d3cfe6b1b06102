//! `process`: Prometheus' standard `process_*` metrics and a `*_build_info` gauge, for both
//! binaries' `/metrics`.

use shared::metrics_text::MetricsText;

/// Prometheus' standard `process_*` metrics (CPU seconds, resident memory, open file
/// descriptors, start time; read from `/proc`, left out where there is none) and
/// `<build_info>{version}` = 1, for both binaries' `/metrics`.
pub fn process_and_build(t: &mut MetricsText, build_info: &str, version: &str) {
    t.gauge_with(
        build_info,
        "The running binary's version (the value is always 1).",
        &[("version", version)],
        1.0,
    );
    // Linux's USER_HZ and page size on every platform this is built for.
    const TICKS: f64 = 100.0;
    const PAGE: f64 = 4096.0;
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces): field 3 is first.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| {
        n.checked_sub(3)
            .and_then(|i| fields.get(i))
            .and_then(|v| v.parse::<f64>().ok())
    };
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        t.counter_float(
            "process_cpu_seconds_total",
            "User and system CPU time spent, in seconds.",
            (utime + stime) / TICKS,
        );
    }
    if let Some(rss) = field(24) {
        t.gauge(
            "process_resident_memory_bytes",
            "Resident memory size, in bytes.",
            rss * PAGE,
        );
    }
    let boot = std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok());
    if let (Some(boot), Some(start)) = (boot, field(22)) {
        t.gauge(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds.",
            boot + start / TICKS,
        );
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        t.gauge(
            "process_open_fds",
            "Open file descriptors.",
            fds.count() as f64,
        );
    }
}
