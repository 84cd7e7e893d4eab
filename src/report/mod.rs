//! Renderers that are pure functions of computed figures.

pub mod html;
