//! A self-contained SVG: per-block stacked stage times for each mode, and the
//! distribution of per-block Ggas/s per mode (box plot).

use crate::report::{median, ModeReport};
use std::fmt::Write;

const STAGES: [(&str, &str); 7] = [
    ("recover", "#8dd3c7"),
    ("warmer", "#ffffb3"),
    ("exec", "#bebada"),
    ("validate", "#fb8072"),
    ("merkle", "#80b1d3"),
    ("store", "#fdb462"),
    ("other", "#d9d9d9"),
];

fn stage_values(b: &crate::report::BlockRow) -> [f64; 7] {
    let s = &b.stages;
    let known = s.recover_ms + s.warmer_ms + s.exec_ms + s.validate_ms + s.merkle_ms + s.store_ms;
    [
        s.recover_ms,
        s.warmer_ms,
        s.exec_ms,
        s.validate_ms,
        s.merkle_ms,
        s.store_ms,
        (s.total_ms - known).max(0.0),
    ]
}

/// A self-contained SVG document: per mode, a stacked bar of stage times (ms) per block,
/// then a box plot of per-block Ggas/s per mode.
pub fn svg(reports: &[ModeReport]) -> String {
    let width = 1000.0;
    let panel_h = 220.0;
    let box_h = 260.0;
    let height = 40.0 + panel_h * reports.len() as f64 + box_h + 40.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="20" font-size="16">import-bench: per-block stage times (ms) and Ggas/s</text>"#
    );
    let max_total = reports
        .iter()
        .flat_map(|r| r.blocks.iter().map(|b| b.stages.total_ms))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    for (i, r) in reports.iter().enumerate() {
        let top = 40.0 + panel_h * i as f64;
        let plot_h = panel_h - 40.0;
        let n = r.blocks.len().max(1) as f64;
        let bar_w = (width - 80.0) / n;
        let _ =
            write!(s, r#"<text x="10" y="{}" font-weight="bold">{}</text>"#, top + 14.0, r.name);
        let _ = write!(s, r#"<text x="10" y="{}">{:.1} ms</text>"#, top + 30.0, max_total);
        for (j, b) in r.blocks.iter().enumerate() {
            let mut y = top + 20.0 + plot_h;
            for (k, v) in stage_values(b).iter().enumerate() {
                let h = v / max_total * plot_h;
                y -= h;
                let _ = write!(
                    s,
                    r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"/>"#,
                    70.0 + j as f64 * bar_w,
                    y,
                    bar_w.max(0.5),
                    h,
                    STAGES[k].1
                );
            }
        }
    }
    let legend_y = 40.0 + panel_h * reports.len() as f64;
    for (k, (name, color)) in STAGES.iter().enumerate() {
        let x = 70.0 + k as f64 * 110.0;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{legend_y}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{name}</text>"#,
            x + 16.0,
            legend_y + 11.0
        );
    }
    // Box plot of Ggas/s per mode.
    let top = legend_y + 40.0;
    let plot_h = box_h - 60.0;
    let max_g = reports
        .iter()
        .flat_map(|r| r.blocks.iter().map(|b| b.stages.ggas_per_s))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let _ = write!(
        s,
        r#"<text x="10" y="{}" font-weight="bold">Ggas/s per block (min, quartiles, median, max)</text>"#,
        top - 8.0
    );
    for (i, r) in reports.iter().enumerate() {
        let mut v: Vec<f64> = r.blocks.iter().map(|b| b.stages.ggas_per_s).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        if v.is_empty() {
            continue;
        }
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        let y = |g: f64| top + plot_h - g / max_g * plot_h;
        let x = 120.0 + i as f64 * 200.0;
        let med = median(v.clone());
        let _ = write!(
            s,
            r#"<line x1="{x}" x2="{x}" y1="{:.1}" y2="{:.1}" stroke="black"/>"#,
            y(q(0.0)),
            y(q(1.0))
        );
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="60" height="{:.1}" fill="{}" stroke="black"/>"#,
            x - 30.0,
            y(q(0.75)),
            (y(q(0.25)) - y(q(0.75))).max(1.0),
            STAGES[i % 6].1
        );
        let _ = write!(
            s,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black" stroke-width="2"/>"#,
            x - 30.0,
            x + 30.0,
            y(med),
            y(med)
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} ({:.2})</text>"#,
            x,
            top + plot_h + 18.0,
            r.name,
            med
        );
    }
    let _ = write!(
        s,
        r#"<text x="10" y="{:.1}">{:.2}</text><text x="10" y="{:.1}">0</text>"#,
        top + 4.0,
        max_g,
        top + plot_h
    );
    s.push_str("</svg>\n");
    s
}
