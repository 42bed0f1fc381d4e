//! chart.svg: freshness over time, one line per policy (the mean over the
//! seeds of each window's freshness), each named at its end and in the
//! legend. Colours are Okabe and Ito's palette, safe for colour-blind
//! readers, and each line has its own dash pattern too, so that lines that
//! coincide (policies that schedule alike) stay visible one over the other.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::element::{DashedPathElement, IntoDynElement};
use plotters::prelude::*;
use sitemapd_sim::RunReport;

use super::Experiment;

/// Each policy's mean freshness per window: (day, freshness) points.
pub(super) fn mean_series(
    policies: &[String],
    reports: &[RunReport],
) -> Vec<(String, Vec<(f64, f64)>)> {
    policies
        .iter()
        .map(|p| {
            let runs: Vec<&RunReport> = reports.iter().filter(|r| &r.policy == p).collect();
            let windows = runs.iter().map(|r| r.series.len()).min().unwrap_or(0);
            let points = (0..windows)
                .filter_map(|i| {
                    let rows: Vec<_> = runs.iter().filter_map(|r| r.series.get(i)).collect();
                    let first = rows.first()?;
                    let mean = rows.iter().map(|r| r.freshness).sum::<f64>() / rows.len() as f64;
                    Some((first.day, mean))
                })
                .collect();
            (p.clone(), points)
        })
        .collect()
}

/// Okabe and Ito's colour-blind-safe palette, less its yellow (too pale
/// on white); black is the oracle's.
const COLOURS: [RGBColor; 6] = [
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
];

/// Dash patterns (dash, gap in pixels; `None`: solid), taken in turn.
const DASHES: [Option<(u32, u32)>; 3] = [None, Some((10, 5)), Some((3, 4))];

/// The colour and dash pattern of the `i`-th policy line (`oracle`: solid
/// black).
pub(super) fn line_style(i: usize, policy: &str) -> (RGBColor, Option<(u32, u32)>) {
    if policy == sitemapd_sim::ORACLE {
        return (BLACK, None);
    }
    // Past the colours, the dashes shift: no two lines alike.
    let dash = (i + i / COLOURS.len()) % DASHES.len();
    (COLOURS[i % COLOURS.len()], DASHES[dash])
}

/// Where to write each line's name at its end: its last y, moved apart so
/// that no two names are closer than `gap` (in y units), in the given
/// order of lines.
fn label_positions(ends: &[f64], gap: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ends.len()).collect();
    order.sort_by(|&a, &b| ends[b].total_cmp(&ends[a]));
    let mut placed = vec![0.0; ends.len()];
    let mut last: Option<f64> = None;
    for i in order {
        let y = match last {
            Some(above) => ends[i].min(above - gap),
            None => ends[i],
        };
        placed[i] = y;
        last = Some(y);
    }
    placed
}

/// Draws the chart to `path` (SVG).
pub(super) fn freshness_chart(
    path: &Path,
    experiment: &Experiment,
    reports: &[RunReport],
) -> Result<()> {
    let series = mean_series(&experiment.policies, reports);
    let lowest = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(1.0f64, f64::min);
    let y_min = ((lowest * 10.0).floor() / 10.0).clamp(0.0, 0.9);
    let days = experiment.sim.days;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let (width, height) = (1000u32, 580u32);
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let sim = &experiment.sim;
    let caption = format!(
        "Freshness over time: {} pages, {} hosts, {} fetches/day, {} seed{}",
        sim.world.pages,
        sim.world.hosts,
        sim.crawl.budget,
        experiment.seeds.len(),
        if experiment.seeds.len() == 1 {
            ""
        } else {
            "s (mean)"
        }
    );
    // Room on the right for the lines' names.
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .margin_right(150)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..days, y_min..1.0f64)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("simulated day")
        .y_desc("freshness (share of pages up to date)")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| err(&e))?;
    // The warm-up the summary leaves out: a dashed grey line, named.
    let warmup = sim.warmup();
    let grey = RGBColor(0x66, 0x66, 0x66);
    chart
        .draw_series(DashedLineSeries::new(
            [(warmup, y_min), (warmup, 1.0)],
            6,
            4,
            grey.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label(format!("end of warm-up (day {warmup})"))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], grey.stroke_width(2)));
    let mut ends = Vec::new();
    for (i, (policy, points)) in series.iter().enumerate() {
        let (colour, dash) = line_style(i, policy);
        let style = colour.stroke_width(2);
        let drawn = match dash {
            None => chart.draw_series(LineSeries::new(points.iter().copied(), style)),
            Some((on, off)) => chart.draw_series(DashedLineSeries::new(
                points.iter().copied(),
                on,
                off,
                style,
            )),
        };
        drawn
            .map_err(|e| err(&e))?
            .label(policy.as_str())
            .legend(move |(x, y)| match dash {
                None => PathElement::new([(x, y), (x + 24, y)], style).into_dyn(),
                Some((on, off)) => {
                    DashedPathElement::new([(x, y), (x + 24, y)], on, off, style).into_dyn()
                }
            });
        if let Some(&end) = points.last() {
            ends.push((policy.clone(), colour, end));
        }
    }
    // Each line's name at its end, names kept 14 px apart.
    let plot_height = f64::from(height) - 44.0 - 16.0 - 36.0;
    let gap = 14.0 * (1.0 - y_min) / plot_height;
    let at = label_positions(&ends.iter().map(|e| e.2.1).collect::<Vec<_>>(), gap);
    for ((policy, colour, (x, _)), y) in ends.into_iter().zip(at) {
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((x, y))
                    + Text::new(
                        policy,
                        (6, -7),
                        ("sans-serif", 13).into_font().color(&colour),
                    ),
            ))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_at_the_lines_ends_do_not_overlap() {
        // Two lines ending at the same freshness, a third just below.
        let at = label_positions(&[0.9, 0.9, 0.899, 0.5], 0.01);
        assert_eq!(at[0], 0.9);
        assert!((at[1] - 0.89).abs() < 1e-9, "{at:?}");
        assert!((at[2] - 0.88).abs() < 1e-9, "{at:?}");
        assert_eq!(at[3], 0.5, "far below: where it ends");
    }

    #[test]
    fn no_two_lines_look_alike() {
        // Eight policies besides the oracle, and more.
        let styles: Vec<_> = (0..18).map(|i| line_style(i, "x")).collect();
        for (i, a) in styles.iter().enumerate() {
            assert_ne!(a.0, BLACK, "black is the oracle's");
            for b in &styles[i + 1..] {
                assert_ne!(a, b, "line {i}");
            }
        }
        for pair in styles.windows(2) {
            assert_ne!(pair[0].0, pair[1].0, "neighbours differ in colour");
        }
        assert_eq!(line_style(3, sitemapd_sim::ORACLE), (BLACK, None));
    }
}
