//! Hydrates the console (placeholder until the console lands).
