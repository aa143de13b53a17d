//! A self-contained SVG: IOPS and mean latency against reader threads, one line per
//! database, the published figures dashed.

use crate::report::published;
use crate::Report;
use std::fmt::Write;

const COLORS: [(&str, &str); 2] = [("mdbx", "#1f77b4"), ("rocksdb", "#d62728")];

/// One line of a panel: its legend, colour, whether dashed (published), and its points
/// (threads, value).
struct Series {
    name: String,
    color: &'static str,
    dashed: bool,
    points: Vec<(usize, f64)>,
}

struct Panel<'a> {
    title: &'a str,
    y: fn(f64, f64) -> f64,
    unit: &'a str,
}

/// The two panels side by side (x: threads, log2; y: linear from 0).
pub fn svg(r: &Report) -> String {
    let (w, h, pad) = (460.0, 300.0, 55.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">"#,
        2.0 * w,
        h + 40.0
    );
    let threads: Vec<usize> = {
        let mut t: Vec<usize> = r.points.iter().map(|p| p.threads).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let panels = [
        Panel { title: "reads per second", y: |iops, _| iops, unit: "IOPS" },
        Panel { title: "mean read latency", y: |_, us| us, unit: "µs" },
    ];
    for (i, panel) in panels.iter().enumerate() {
        let x0 = i as f64 * w;
        // Every series of the panel, ours and published, for the axis range.
        let mut series: Vec<Series> = Vec::new();
        for (db, color) in COLORS {
            let ours: Vec<(usize, f64)> = r
                .points
                .iter()
                .filter(|p| p.db == db)
                .map(|p| (p.threads, (panel.y)(p.iops, p.mean_us)))
                .collect();
            if ours.is_empty() {
                continue;
            }
            let theirs: Vec<(usize, f64)> =
                published(db).iter().map(|p| (p.threads, (panel.y)(p.iops, p.mean_us))).collect();
            series.push(Series {
                name: format!("{db} (ours)"),
                color,
                dashed: false,
                points: ours,
            });
            series.push(Series {
                name: format!("{db} (published)"),
                color,
                dashed: true,
                points: theirs,
            });
        }
        let max_t = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(threads.iter().copied())
            .max()
            .unwrap_or(1)
            .max(2);
        let max_y =
            series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0f64, f64::max) * 1.1;
        let max_y = if max_y > 0.0 { max_y } else { 1.0 };
        let px = |t: usize| x0 + pad + (t as f64).log2() / (max_t as f64).log2() * (w - 2.0 * pad);
        let py = |y: f64| 20.0 + (h - pad) * (1.0 - y / max_y);
        let _ = write!(
            s,
            r#"<text x="{}" y="14" text-anchor="middle" font-weight="bold">{} ({})</text>"#,
            x0 + w / 2.0,
            panel.title,
            panel.unit
        );
        let _ = write!(
            s,
            r##"<line x1="{a}" y1="{b}" x2="{c}" y2="{b}" stroke="#333"/><line x1="{a}" y1="20" x2="{a}" y2="{b}" stroke="#333"/>"##,
            a = x0 + pad,
            b = py(0.0),
            c = x0 + w - pad
        );
        for k in 0..=4 {
            let y = max_y * k as f64 / 4.0;
            let label = if y >= 1e3 { format!("{:.0}K", y / 1e3) } else { format!("{y:.0}") };
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#,
                x0 + pad - 4.0,
                py(y) + 4.0
            );
        }
        let mut t = 1;
        while t <= max_t {
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{t}</text>"#,
                px(t),
                py(0.0) + 14.0
            );
            t *= 2;
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">threads</text>"#,
            x0 + w / 2.0,
            py(0.0) + 28.0
        );
        for (n, Series { name, color, dashed, points }) in series.iter().enumerate() {
            let path: Vec<String> =
                points.iter().map(|&(t, y)| format!("{:.1},{:.1}", px(t), py(y))).collect();
            let dash = if *dashed { r#" stroke-dasharray="5,4""# } else { "" };
            let _ = write!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
                path.join(" ")
            );
            for &(t, y) in points.iter() {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                    px(t),
                    py(y)
                );
            }
            let ly = h + 5.0 + 12.0 * (n % 2) as f64;
            let lx = x0 + pad + 200.0 * (n / 2) as f64;
            let _ = write!(
                s,
                r#"<line x1="{lx}" y1="{a}" x2="{b}" y2="{a}" stroke="{color}" stroke-width="2"{dash}/><text x="{c}" y="{d}">{name}</text>"#,
                a = ly,
                b = lx + 20.0,
                c = lx + 24.0,
                d = ly + 4.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
