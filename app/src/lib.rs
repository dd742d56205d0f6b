//! The web console (placeholder until the console lands).
