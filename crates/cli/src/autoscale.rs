//! `anduin run … --autoscale`: the autoscaler's flags, checked against the query before it
//! runs (the settings that name operators must fit its graph), and the settings it runs with.

use std::time::Duration;

use anduin_runtime::autoscaler::{apply_setting, fit, AutoscaleSettings, Rescalable};
use anyhow::Result;
use clap::Args;

use crate::embedded::{parse_duration, EngineArgs};
use crate::load::Loaded;

/// The autoscaler's flags.
#[derive(Args, Debug, Clone)]
pub struct AutoscaleArgs {
    /// Rescale the query's keyed operators while it runs, by the rates they measure (DS2,
    /// with stabilisation and scale-down guards; docs/autoscale.md). Needs --max-parallelism:
    /// an operator is rescaled between 1 and the instances that run it, or up to its bounds
    /// (`--autoscale-set bounds.OP=1..N`, instances beyond started while running; not with
    /// --loopback-workers). `anduin ctl autoscale QUERY` shows its decisions.
    #[arg(long)]
    pub autoscale: bool,
    /// The time between the autoscaler's rounds: each decides on the figures of this window.
    #[arg(long, requires = "autoscale", default_value = "10s", value_parser = parse_interval, value_name = "DURATION")]
    pub autoscale_interval: Duration,
    /// An autoscaler setting (repeatable): target_utilisation=0.7, stabilisation=5m,
    /// scale_down_delay=1h, max_scale_down_factor=0.6, fully_busy_ratio=0.95, catch_up=5m,
    /// rescale_history=5, bounds.OPERATOR=MIN..MAX, source_rates.OPERATOR=ROWS_PER_SECOND.
    #[arg(
        long = "autoscale-set",
        requires = "autoscale",
        value_name = "KEY=VALUE"
    )]
    pub autoscale_set: Vec<String>,
}

/// An interval of at least 10 ms.
pub(crate) fn parse_interval(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d < Duration::from_millis(10) => Err(format!(
            "expected an interval of at least 10ms, found `{s}`"
        )),
        d => Ok(d),
    }
}

/// The settings the autoscaler runs `loaded` with, if asked for: refused (before anything
/// runs) when a setting is invalid or does not fit the query.
pub fn settings(
    args: &AutoscaleArgs,
    engine: &EngineArgs,
    loaded: &Loaded,
) -> Result<Option<AutoscaleSettings>> {
    if !args.autoscale {
        return Ok(None);
    }
    let Some(max) = engine.max_parallelism else {
        anyhow::bail!(
            "--autoscale needs --max-parallelism N: the autoscaler rescales keyed operators \
             between 1 and the N instances the query runs of each (N at most 720, above \
             --parallelism)"
        );
    };
    let mut settings = AutoscaleSettings {
        interval: args.autoscale_interval,
        ..AutoscaleSettings::default()
    };
    for given in &args.autoscale_set {
        apply_setting(&mut settings.config, given)?;
    }
    let graph = &loaded.graph;
    let operators: Vec<Rescalable> = graph
        .topo
        .iter()
        .map(|id| {
            let node = graph.node(*id);
            Rescalable {
                name: node.name().to_string(),
                source: node.inputs.is_empty(),
                // One instance cannot be rescaled (the run plans none to spare).
                instances: (anduin_graph::rescalable(node) && max >= 2)
                    .then(|| u32::try_from(max).unwrap_or(u32::MAX)),
                // An embedded run starts instances beyond those while it runs; a cluster's
                // caps the bounds at them when it fits them itself.
                grows: anduin_graph::rescalable(node)
                    && max >= 2
                    && engine.loopback_workers.is_none(),
            }
        })
        .collect();
    fit(&settings.config, &operators)?;
    Ok(Some(settings))
}
