//! memgate's integration tests, one binary (ripgrep's and nextest's layout):
//! one module per area, `common` the helper kit (the command builder,
//! fixture paths, snapshot builders, JSON helpers). Touching one renderer
//! relinks this one binary, not one per file.

mod common;

mod architecture;
mod base_baseline;
mod budget_data;
mod capacity;
mod category_rules;
mod check_cannot_judge;
mod check_dashboards;
mod check_gate;
mod check_html;
mod check_metrics;
mod check_reports;
mod check_snapshots;
mod cli_analysis;
mod docs_toml;
mod document_renderers;
mod environment;
mod examples;
mod findings;
mod fragmentation;
mod frames_lists;
mod from_mosaic;
mod group_by;
mod hostile;
mod init;
mod init_truth;
mod inline_categories;
mod input_kind;
mod lean_build;
mod loader;
mod log_injection;
mod lower_bounds;
mod metadata_host;
mod mutations;
mod no_story;
mod one_replay;
mod page_truth;

mod owners;
mod peak_metrics;
mod peak_moment;
mod phases_summary;
mod pools;
mod portable_sites;
mod ranks;
mod ranks_html;
mod real_figures;
mod regex_budgets;
mod renderings;
mod repeats;
mod rule_phases;
mod schemas;
mod status_words;
mod synthetic_figures;
mod templates;
mod terminal_colour;
mod time_budgets;
mod time_structure;
mod time_windows;
mod timeline_moments;
mod traps;
mod trust;
mod trust_baseline;
mod trust_budget;
mod trust_files;
mod waivers;
