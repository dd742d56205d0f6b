//! The SQL that list queries are made of, written once for the REST pages ([`crate::paging`])
//! and the GraphQL keyset pages ([`crate::resource_pages`]): bound values, conditions whose `?`
//! placeholders are numbered when a statement is put together, text matching with one escaping
//! on both databases, `IN` lists and the walk over a column's distinct values.

use std::sync::Arc;

use sqlx::Row;

use crate::shared_runs::SharedRuns;
use crate::{Result, Store};

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Bind {
    Text(String),
    Int(i64),
}

/// Conditions ANDed together, each with the values of its `?` placeholders in textual order.
/// The placeholders become `$n` when the statement is rendered, numbered after whatever the
/// statement binds before them, so one condition can go into several statements.
#[derive(Debug, Clone, Default)]
pub(crate) struct Condition {
    parts: Vec<(String, Vec<Bind>)>,
}

impl Condition {
    /// Adds `sql`, which has a `?` for each value of `binds`, in order. The SQL written into a
    /// condition must hold no other `?` (no string literal or operator with one).
    pub(crate) fn push(&mut self, sql: String, binds: Vec<Bind>) {
        debug_assert_eq!(sql.matches('?').count(), binds.len(), "placeholders and values of {sql:?}");
        self.parts.push((sql, binds));
    }

    /// Adds a condition that binds nothing.
    pub(crate) fn push_sql(&mut self, sql: impl Into<String>) {
        self.push(sql.into(), vec![]);
    }

    /// Adds a text test (see [`like`]).
    pub(crate) fn push_like(&mut self, column: &str, test: TextTest<'_>, negated: bool) {
        let (sql, bind) = like(column, test);
        self.push(if negated { format!("NOT ({sql})") } else { sql }, vec![bind]);
    }

    /// Any of `tests` on `column` (ORed).
    pub(crate) fn push_like_any<'t>(&mut self, column: &str, tests: impl IntoIterator<Item = TextTest<'t>>) {
        let (sqls, binds): (Vec<String>, Vec<Bind>) = tests.into_iter().map(|test| like(column, test)).unzip();
        match sqls.is_empty() {
            true => self.push_sql("1 = 0"),
            false => self.push(sqls.join(" OR "), binds),
        }
    }

    /// `column IN (values)`, or `NOT IN`; an empty list matches nothing (everything, negated).
    pub(crate) fn push_in(&mut self, column: &str, values: &[String], negated: bool) {
        let marks = vec!["?"; values.len()].join(", ");
        let sql = match (values.is_empty(), negated) {
            (true, false) => "1 = 0".to_string(),
            (true, true) => "1 = 1".to_string(),
            (false, false) => format!("{column} IN ({marks})"),
            (false, true) => format!("{column} NOT IN ({marks})"),
        };
        let binds = if values.is_empty() { vec![] } else { values.iter().cloned().map(Bind::Text).collect() };
        self.push(sql, binds);
    }

    /// The conditions as SQL with `$first`, `$first+1`... and the values in that order.
    pub(crate) fn render(&self, first_placeholder: usize) -> (String, Vec<Bind>) {
        let mut n = first_placeholder;
        let mut binds = Vec::new();
        let mut clauses = Vec::new();
        for (sql, values) in &self.parts {
            let mut out = String::with_capacity(sql.len() + 8);
            for ch in sql.chars() {
                if ch == '?' {
                    out.push_str(&format!("${n}"));
                    n += 1;
                } else {
                    out.push(ch);
                }
            }
            clauses.push(format!("({out})"));
            binds.extend(values.iter().cloned());
        }
        (if clauses.is_empty() { "1 = 1".into() } else { clauses.join(" AND ") }, binds)
    }
}

/// Binds `binds` in order.
pub(crate) fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    binds: &[Bind],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for bind in binds {
        query = match bind {
            Bind::Text(text) => query.bind(text.clone()),
            Bind::Int(i) => query.bind(*i),
        };
    }
    query
}

/// How a text filter matches a column, case-insensitively.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TextTest<'a> {
    /// The column contains this text: `%`, `_` and `\` in it are those characters (the REST
    /// lists' `filter.x=text`).
    Contains(&'a str),
    /// The column matches this LIKE pattern: `%` and `_` are wildcards and `\` makes the next
    /// character itself (the GraphQL `contains`, which Inmanta's console sends as `%text%`).
    Pattern(&'a str),
}

/// `LOWER(column) LIKE ? ESCAPE '\'` and its value: the same test on SQLite (whose LIKE has no
/// escape character unless told) and PostgreSQL (whose `ILIKE` would escape with `\` by default).
pub(crate) fn like(column: &str, test: TextTest<'_>) -> (String, Bind) {
    let pattern = match test {
        TextTest::Contains(text) => format!("%{}%", escape_like(&text.to_lowercase())),
        TextTest::Pattern(pattern) => pattern.to_lowercase(),
    };
    (format!("LOWER({column}) LIKE ? ESCAPE '\\'"), Bind::Text(pattern))
}

/// A LIKE pattern that matches `text` literally (escape character `\`).
pub(crate) fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `SELECT d.v FROM d`: the distinct values of `column` in `from` within `scope`, walked as a
/// loose index scan (the next value is the least one above the previous), which both databases
/// run as one index seek per value. `scope` may hold placeholders; it is written twice, so it
/// must use numbered ones (`$1`) that both copies share.
pub(crate) fn distinct_values_sql(column: &str, from: &str, scope: &str) -> String {
    format!(
        "WITH RECURSIVE d(v) AS (SELECT MIN({column}) FROM {from} WHERE {scope} \
         UNION ALL SELECT (SELECT MIN({column}) FROM {from} WHERE ({scope}) AND {column} > d.v) FROM d \
         WHERE d.v IS NOT NULL) SELECT d.v AS v FROM d WHERE d.v IS NOT NULL"
    )
}

/// A statement with its values: what makes two reads the same read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Statement {
    pub sql: String,
    pub binds: Vec<Bind>,
}

/// The statements of list reads that identical reads in flight share ([`crate::shared_runs`]):
/// the counts of a filter's rows, the same for every page of it, and the distinct values a
/// filter's text selects. Each run takes its own turn of the list queue
/// ([`Store::list_permit`]); the requests that joined it wait without one.
#[derive(Default)]
pub(crate) struct SharedStatements {
    counts: Arc<SharedRuns<Statement, Option<Vec<i64>>>>,
    texts: Arc<SharedRuns<Statement, Option<Vec<String>>>>,
}

impl Store {
    /// The integer columns of the one row `statement` answers, read once for every identical
    /// request in flight (an answer read after this call began).
    pub(crate) async fn shared_counts(&self, statement: Statement) -> Result<Vec<i64>> {
        let (store, again) = (self.clone(), statement.clone());
        let key = statement.clone();
        let shared =
            self.shared_statements().counts.read(key, move || async move { store.counts(&statement).await.ok() });
        match shared.await.as_deref() {
            Some(Some(counts)) => Ok(counts.clone()),
            // The shared run failed: this request's own run says why.
            _ => self.counts(&again).await,
        }
    }

    /// The text column `v` of every row `statement` answers, shared as [`Self::shared_counts`].
    pub(crate) async fn shared_texts(&self, statement: Statement) -> Result<Vec<String>> {
        let (store, again) = (self.clone(), statement.clone());
        let key = statement.clone();
        let shared =
            self.shared_statements().texts.read(key, move || async move { store.texts(&statement).await.ok() });
        match shared.await.as_deref() {
            Some(Some(texts)) => Ok(texts.clone()),
            _ => self.texts(&again).await,
        }
    }

    async fn counts(&self, statement: &Statement) -> Result<Vec<i64>> {
        let _turn = self.list_permit().await?;
        let row = bind_all(sqlx::query(&statement.sql), &statement.binds).fetch_one(self.pool()).await?;
        (0..row.len()).map(|i| Ok(row.try_get::<i64, _>(i)?)).collect()
    }

    async fn texts(&self, statement: &Statement) -> Result<Vec<String>> {
        let _turn = self.list_permit().await?;
        let rows = bind_all(sqlx::query(&statement.sql), &statement.binds).fetch_all(self.pool()).await?;
        rows.iter().map(|row| Ok(row.try_get::<String, _>("v")?)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_after_the_ones_before_them() {
        let mut condition = Condition::default();
        condition.push("a = ? OR b = ?".into(), vec![Bind::Int(1), Bind::Int(2)]);
        condition.push_in("c", &["x".into()], true);
        condition.push_sql("d IS NULL");
        let (sql, binds) = condition.render(3);
        assert_eq!(sql, "(a = $3 OR b = $4) AND (c NOT IN ($5)) AND (d IS NULL)");
        assert_eq!(binds.len(), 3);
    }

    #[test]
    fn contained_text_is_escaped_and_a_pattern_is_not() {
        let (sql, Bind::Text(contains)) = like("s.agent", TextTest::Contains("A%b_c\\d")) else { panic!("text") };
        assert_eq!(sql, "LOWER(s.agent) LIKE ? ESCAPE '\\'");
        assert_eq!(contains, "%a\\%b\\_c\\\\d%");
        let (_, Bind::Text(pattern)) = like("s.agent", TextTest::Pattern("%Agent\\_1%")) else { panic!("text") };
        assert_eq!(pattern, "%agent\\_1%");
    }

    #[test]
    fn an_empty_in_list_matches_nothing_or_everything() {
        let mut condition = Condition::default();
        condition.push_in("c", &[], false);
        condition.push_in("c", &[], true);
        assert_eq!(condition.render(1).0, "(1 = 0) AND (1 = 1)");
    }
}
