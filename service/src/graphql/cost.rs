//! The cost of a query, decided before it runs (issue 47): every field, fragment spread and
//! inline fragment it selects once its fragments are expanded. async-graphql's own complexity
//! and depth checks expand each spread where it stands, so a chain of fragments that each spread
//! the previous one twice makes the check itself take 2^n steps; here each fragment is counted
//! once and its cost reused wherever it is spread, so the check is linear in the query's text.

use std::collections::HashMap;

use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, Selection, SelectionSet};

/// The expanded size of every operation of `document` together (validation looks at them all),
/// capped at `limit + 1`: anything above `limit` is refused, however far above.
pub fn expanded_size(document: &ExecutableDocument, limit: usize) -> usize {
    let mut counter = Counter { document, limit, fragments: HashMap::new() };
    let operations: Vec<&SelectionSet> = match &document.operations {
        DocumentOperations::Single(op) => vec![&op.node.selection_set.node],
        DocumentOperations::Multiple(ops) => ops.values().map(|op| &op.node.selection_set.node).collect(),
    };
    operations.into_iter().fold(0, |total, set| {
        let size = counter.selection_set(set, 0);
        counter.cap(total.saturating_add(size))
    })
}

/// Selections and spreads nested in one another.
const MAX_NESTING: usize = 256;

struct Counter<'a> {
    document: &'a ExecutableDocument,
    limit: usize,
    /// `None` while a fragment is being counted: a spread of it then (a cycle, which validation
    /// refuses) counts as nothing more.
    fragments: HashMap<&'a str, Option<usize>>,
}

impl<'a> Counter<'a> {
    fn cap(&self, n: usize) -> usize {
        n.min(self.limit.saturating_add(1))
    }

    fn selection_set(&mut self, set: &'a SelectionSet, depth: usize) -> usize {
        // Far deeper than any query the depth limit lets through: refused without going on,
        // so no text makes this recursion overflow the stack.
        if depth > MAX_NESTING {
            return self.cap(usize::MAX);
        }
        let mut total = 0usize;
        for item in &set.items {
            let inner = match &item.node {
                Selection::Field(field) => self.selection_set(&field.node.selection_set.node, depth + 1),
                Selection::InlineFragment(fragment) => self.selection_set(&fragment.node.selection_set.node, depth + 1),
                Selection::FragmentSpread(spread) => self.fragment(spread.node.fragment_name.node.as_str(), depth + 1),
            };
            total = self.cap(total.saturating_add(1).saturating_add(inner));
            if total > self.limit {
                break;
            }
        }
        total
    }

    fn fragment(&mut self, name: &'a str, depth: usize) -> usize {
        if let Some(known) = self.fragments.get(name) {
            return known.unwrap_or(0);
        }
        // An unknown fragment: validation says so.
        let Some((key, definition)) = self.document.fragments.get_key_value(name) else { return 0 };
        self.fragments.insert(key.as_str(), None);
        let size = self.selection_set(&definition.node.selection_set.node, depth);
        self.fragments.insert(key.as_str(), Some(size));
        size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(query: &str) -> usize {
        expanded_size(&async_graphql::parser::parse_query(query).unwrap(), 1_000_000)
    }

    /// `query { ...F<n> }` where each fragment spreads the one before it twice.
    fn doubling(n: usize) -> String {
        let mut query = format!("query {{ ...F{n} }}\nfragment F0 on Query {{ environments {{ totalCount }} }}\n");
        for i in 1..=n {
            query.push_str(&format!("fragment F{i} on Query {{ ...F{} ...F{} }}\n", i - 1, i - 1));
        }
        query
    }

    #[test]
    fn fragments_count_as_expanded() {
        assert_eq!(size("{ a b { c } }"), 3);
        assert_eq!(size("{ ...F ...F } fragment F on Query { a b }"), 2 * 3);
        assert_eq!(size(&doubling(3)), 1 + 2 * (1 + 2 * (1 + 2 * (1 + 2))), "spreads of spreads");
        assert_eq!(size("{ ... on Query { a } }"), 2);
    }

    #[test]
    fn an_explosion_is_capped_at_once() {
        let started = std::time::Instant::now();
        let document = async_graphql::parser::parse_query(doubling(60)).unwrap();
        assert_eq!(expanded_size(&document, 2000), 2001);
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    }

    #[test]
    fn a_cycle_ends() {
        assert_eq!(size("{ ...A } fragment A on Query { a ...B } fragment B on Query { ...A }"), 4);
    }
}
