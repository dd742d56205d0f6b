//! The `.cf` modelling language: from `main.cf` to resources.
