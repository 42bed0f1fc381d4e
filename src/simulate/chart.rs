//! chart.svg: freshness over time, one line per policy (the mean over the
//! seeds of each window's freshness), with a legend.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use sitemapd_sim::RunReport;

use super::Experiment;

/// Each policy's mean freshness per window: (day, freshness) points.
pub fn mean_series(policies: &[String], reports: &[RunReport]) -> Vec<(String, Vec<(f64, f64)>)> {
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

/// Draws the chart to `path` (SVG).
pub fn freshness_chart(path: &Path, experiment: &Experiment, reports: &[RunReport]) -> Result<()> {
    let series = mean_series(&experiment.policies, reports);
    let lowest = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(1.0f64, f64::min);
    let y_min = ((lowest * 10.0).floor() / 10.0).clamp(0.0, 0.9);
    let days = experiment.sim.days;
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
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
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
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
    // The warm-up the summary leaves out.
    let warmup = sim.warmup();
    chart
        .draw_series(LineSeries::new(
            [(warmup, y_min), (warmup, 1.0)],
            BLACK.mix(0.25).stroke_width(1),
        ))
        .map_err(|e| err(&e))?
        .label(format!("end of warm-up (day {warmup})"))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], BLACK.mix(0.25)));
    for (i, (policy, points)) in series.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(policy)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(2)));
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
