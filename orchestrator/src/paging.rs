//! Paging, filtering and sorting shared by every v2 list endpoint (docs/api.md, "Paging, filtering, sorting").
//!
//! An endpoint describes its [`View`] once (sort columns, filters, tie-breaker id); a
//! [`PageRequest`] parsed from the query string is checked against it; [`fetch_page`] runs the
//! keyset query (`start`/`end` with `first_id`/`last_id`), so pages stay stable while rows are
//! added, and returns the rows with `links` and `metadata`.

use api::paging::{Links, ListQuery, MAX_LIMIT, PageMetadata};
use sqlx::any::AnyRow;
use sqlx::{FromRow, Row};

use crate::list_sql::{Bind, Condition, Statement, TextTest, bind_all, distinct_values_sql};
use crate::store::format_time;
use crate::{Error, Result, Store};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// How a column's values are compared and bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Text,
    Int,
    /// Stored as fixed-width UTC text; bounds are normalised to that form.
    Date,
}

#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub sql: &'static str,
    pub kind: ColumnKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    /// Contains the text, case-insensitively.
    Partial,
    /// [`FilterKind::Partial`] on a column with few distinct values per scope (an agent, a
    /// resource type) and an index on (scope column, this column): the matching values are
    /// found first, one index seek per distinct value, and the rows are selected with `IN`, so
    /// pages and counts use the indexes instead of testing every row of the scope.
    PartialOfFew,
    /// Equals one of the values, each one of `values` (empty: any value); `!value` excludes it
    /// when `negatable`.
    Choice { negatable: bool, values: &'static [&'static str] },
    /// A 0/1 column against `true`/`false`.
    Bool,
    /// `true`: the column is set; `false`: it is null.
    IsSet,
    /// `lt:`, `le:`, `gt:`, `ge:` constraints, ANDed.
    Range(ColumnKind),
    /// A log level name; matches rows whose numeric level column is at least that severe.
    MinLogLevel,
}

#[derive(Debug, Clone, Copy)]
pub struct Filter {
    pub name: &'static str,
    pub sql: &'static str,
    pub kind: FilterKind,
}

/// What one list endpoint offers.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub sort_columns: &'static [Column],
    pub default_sort: (&'static str, Order),
    pub filters: &'static [Filter],
    /// SQL of the unique tie-breaker that goes with `first_id`/`last_id`.
    pub id_sql: &'static str,
    pub id_kind: ColumnKind,
}

/// The paging part of a request, as the client sent it: the same type the API client builds.
pub type PageRequest = ListQuery;

/// Takes the paging parameters out of query pairs; other parameters are left to the caller,
/// but every value is checked.
pub fn page_request(pairs: &[(String, String)]) -> Result<PageRequest> {
    let mut req = PageRequest::default();
    for (key, value) in pairs {
        crate::validate::id(&format!("the value of {key}"), value)?;
        req.take_pair(key, value).map_err(Error::BadRequest)?;
    }
    Ok(req)
}

/// One page of rows with its links and metadata.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub links: Links,
    pub metadata: PageMetadata,
}

impl<T> Page<T> {
    /// The same page with each row turned into `U`.
    pub fn map<U>(self, convert: impl FnMut(T) -> U) -> Page<U> {
        Page { items: self.items.into_iter().map(convert).collect(), links: self.links, metadata: self.metadata }
    }

    /// The same page with each row turned into `U` (a stored row into its API form); the first
    /// row that does not convert fails the page.
    pub fn try_map<U>(self, convert: impl FnMut(T) -> Result<U>) -> Result<Page<U>> {
        let items = self.items.into_iter().map(convert).collect::<Result<_>>()?;
        Ok(Page { items, links: self.links, metadata: self.metadata })
    }
}

fn typed(kind: ColumnKind, value: &str, what: &str) -> Result<Bind> {
    match kind {
        ColumnKind::Text => Ok(Bind::Text(value.to_string())),
        ColumnKind::Int => value
            .trim()
            .parse()
            .map(Bind::Int)
            .map_err(|_| Error::BadRequest(format!("{what} must be an integer, got {value:?}"))),
        ColumnKind::Date => parse_date(value)
            .map(Bind::Text)
            .ok_or_else(|| Error::BadRequest(format!("{what} must be an ISO-8601 timestamp, got {value:?}"))),
    }
}

/// Reads a date of a filter or bound as Inmanta does (every ISO 8601 form its parser takes,
/// naive ones in UTC) and returns the stored form.
pub(crate) fn parse_date(value: &str) -> Option<String> {
    api::Timestamp::parse_iso8601(value).ok().map(|t| format_time(t.datetime()))
}

/// The values of each [`FilterKind::PartialOfFew`] filter that match, by filter name.
type Resolved = std::collections::HashMap<&'static str, Vec<String>>;

/// Finds, for each [`FilterKind::PartialOfFew`] filter of `req`, the distinct values of its
/// column within the scope that contain one of the filter's texts. The distinct values are
/// walked as a loose index scan (the next value is the least one above the previous), which
/// both databases run as one seek per value.
async fn resolve_few(store: &Store, view: &View, req: &PageRequest, source: &Source<'_>) -> Result<Resolved> {
    let mut resolved = Resolved::new();
    for filter in view.filters.iter().filter(|f| f.kind == FilterKind::PartialOfFew) {
        let texts: Vec<&str> = req.filters.iter().filter(|(k, _)| k == filter.name).map(|(_, v)| v.as_str()).collect();
        if texts.is_empty() {
            continue;
        }
        let mut tests = Condition::default();
        tests.push_like_any("d.v", texts.into_iter().map(TextTest::Contains));
        let (tests, binds) = tests.render(source.scope_binds.len() + 1);
        let sql = format!("{} AND {tests}", distinct_values_sql(filter.sql, source.from, source.scope));
        let mut all_binds: Vec<Bind> = source.scope_binds.iter().cloned().map(Bind::Text).collect();
        all_binds.extend(binds);
        resolved.insert(filter.name, store.shared_texts(Statement { sql, binds: all_binds }).await?);
    }
    Ok(resolved)
}

fn filter_condition(view: &View, req: &PageRequest, resolved: &Resolved) -> Result<Condition> {
    let mut condition = Condition::default();
    let mut names: Vec<&str> = req.filters.iter().map(|(k, _)| k.as_str()).collect();
    names.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        let filter = view.filters.iter().find(|f| f.name == name).ok_or_else(|| {
            let valid: Vec<&str> = view.filters.iter().map(|f| f.name).collect();
            Error::BadRequest(format!("unknown filter {name:?}; this list filters on: {}", valid.join(", ")))
        })?;
        let values: Vec<&str> = req.filters.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect();
        let sql = filter.sql;
        match filter.kind {
            // `%` and `_` in the value are the characters themselves, not wildcards.
            FilterKind::Partial => condition.push_like_any(sql, values.iter().map(|v| TextTest::Contains(v))),
            FilterKind::PartialOfFew => match resolved.get(filter.name).map(Vec::as_slice) {
                Some(matching) => condition.push_in(sql, matching, false),
                None => return Err(Error::Corrupt(format!("filter.{name} was not resolved"))),
            },
            FilterKind::Choice { negatable, values: allowed } => {
                let (excluded, included): (Vec<&str>, Vec<&str>) =
                    values.iter().partition(|v| negatable && v.starts_with('!'));
                for v in included.iter().copied().chain(excluded.iter().map(|v| &v[1..])) {
                    if !allowed.is_empty() && !allowed.contains(&v) {
                        return Err(Error::BadRequest(format!(
                            "filter.{name} must be one of {}{}, got {v:?}",
                            allowed.join(", "),
                            if negatable { " (or one of them after !)" } else { "" }
                        )));
                    }
                }
                if !included.is_empty() {
                    let included: Vec<String> = included.iter().map(|v| v.to_string()).collect();
                    condition.push_in(sql, &included, false);
                }
                for v in excluded {
                    condition.push(format!("{sql} <> ?"), vec![Bind::Text(v[1..].to_string())]);
                }
            }
            FilterKind::Bool | FilterKind::IsSet => {
                let mut wanted = Vec::new();
                for v in &values {
                    wanted.push(match v.to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(Error::BadRequest(format!("filter.{name} must be true or false, got {v:?}"))),
                    });
                }
                let clause = |b: bool| match (filter.kind, b) {
                    (FilterKind::Bool, true) => format!("{sql} = 1"),
                    (FilterKind::Bool, false) => format!("{sql} = 0"),
                    (_, true) => format!("{sql} IS NOT NULL"),
                    (_, false) => format!("{sql} IS NULL"),
                };
                let ors: Vec<String> = wanted.into_iter().map(clause).collect();
                condition.push(ors.join(" OR "), vec![]);
            }
            FilterKind::MinLogLevel => {
                let v = values.last().copied().unwrap_or_default();
                let level = api::resource::log_level_number(v).ok_or_else(|| {
                    let names: Vec<&str> = api::resource::LOG_LEVELS.iter().map(|(n, _)| *n).collect();
                    Error::BadRequest(format!("filter.{name} must be one of {}, got {v:?}", names.join(", ")))
                })?;
                condition.push(format!("{sql} >= ?"), vec![Bind::Int(level)]);
            }
            FilterKind::Range(kind) => {
                for v in values {
                    let (op, operand) = v.split_once(':').ok_or_else(|| {
                        Error::BadRequest(format!(
                            "filter.{name} takes lt:, le:, gt: or ge: followed by a value, got {v:?}"
                        ))
                    })?;
                    let op = match op {
                        "lt" => "<",
                        "le" => "<=",
                        "gt" => ">",
                        "ge" => ">=",
                        _ => return Err(Error::BadRequest(format!("filter.{name}: unknown operator {op:?}"))),
                    };
                    condition.push(format!("{sql} {op} ?"), vec![typed(kind, operand, &format!("filter.{name}"))?]);
                }
            }
        }
    }
    Ok(condition)
}

fn parse_sort(view: &View, sort: Option<&str>) -> Result<(Column, Order)> {
    let (name, order) = match sort {
        None => view.default_sort,
        Some(spec) => {
            let (name, order) = spec.rsplit_once('.').ok_or_else(|| {
                Error::BadRequest(format!("sort must look like <column>.asc or <column>.desc, got {spec:?}"))
            })?;
            let order = match order.to_ascii_lowercase().as_str() {
                "asc" => Order::Asc,
                "desc" => Order::Desc,
                _ => return Err(Error::BadRequest(format!("sort order must be asc or desc, got {order:?}"))),
            };
            (name, order)
        }
    };
    let column = view.sort_columns.iter().find(|c| c.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
        let valid: Vec<&str> = view.sort_columns.iter().map(|c| c.name).collect();
        Error::BadRequest(format!("cannot sort on {name:?}; this list sorts on: {}", valid.join(", ")))
    })?;
    Ok((*column, order))
}

/// Where an endpoint's rows come from: `SELECT {select} FROM {from} WHERE {scope}`.
///
/// `scope` is the endpoint's own condition (e.g. the environment) with `$1..$n` placeholders
/// for `scope_binds`; `base_path` is the endpoint's path for the links.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub select: &'a str,
    pub from: &'a str,
    pub scope: &'a str,
    pub scope_binds: &'a [String],
    pub base_path: &'a str,
}

/// Runs one page of `source` as `req` asks, within what `view` allows.
pub async fn fetch_page<T>(store: &Store, view: &View, req: &PageRequest, source: Source<'_>) -> Result<Page<T>>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    fetch_page_linking(store, view, req, source, &[]).await
}

/// [`fetch_page`] whose links also carry `link_params` (after the filters, before the page
/// bounds, where Inmanta puts the resource list's `deploy_summary`).
pub async fn fetch_page_linking<T>(
    store: &Store,
    view: &View,
    req: &PageRequest,
    source: Source<'_>,
    link_params: &[(&str, &str)],
) -> Result<Page<T>>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let Source { select, from, scope, scope_binds, base_path } = source;
    // `limit=0` is what `inmanta-cli monitor` sends for the deploy summary; Inmanta then puts no
    // bound on the page (every row, `page_size` 0), and so do we.
    let limit = req.limit.unwrap_or(MAX_LIMIT);
    let sql_limit = if limit == 0 { String::new() } else { format!(" LIMIT {limit}") };
    if limit > MAX_LIMIT {
        return Err(Error::BadRequest(format!("limit must be between 0 and {MAX_LIMIT}, got {limit}")));
    }
    if req.start.is_some() && req.end.is_some() {
        return Err(Error::BadRequest("give start or end, not both".into()));
    }
    let (column, order) = parse_sort(view, req.sort.as_deref())?;
    let resolved = resolve_few(store, view, req, &source).await?;
    let filters = filter_condition(view, req, &resolved)?;
    let scope_binds: Vec<Bind> = scope_binds.iter().cloned().map(Bind::Text).collect();
    let c = column.sql;
    let id = view.id_sql;

    // The page bound: rows strictly after `start` (or before `end`) in ascending value order.
    let mut bounded = filters.clone();
    let fetch_ascending = match (&req.start, &req.end) {
        (Some(start), None) => {
            push_bound(&mut bounded, column, view, ">", start, req.first_id.as_deref())?;
            true
        }
        (None, Some(end)) => {
            push_bound(&mut bounded, column, view, "<", end, req.last_id.as_deref())?;
            false
        }
        _ => order == Order::Asc,
    };
    let direction = if fetch_ascending { "ASC" } else { "DESC" };
    let (condition, binds) = bounded.render(scope_binds.len() + 1);
    let sql = format!(
        "SELECT {c} AS paging_sort, CAST({id} AS TEXT) AS paging_id, {select} FROM {from} WHERE ({scope}) AND {condition} \
         ORDER BY {c} {direction}, {id} {direction}{sql_limit}"
    );
    let query = bind_all(bind_all(sqlx::query(&sql), &scope_binds), &binds);
    let rows = {
        let _turn = store.list_permit().await?;
        query.fetch_all(store.pool()).await?
    };
    let mut keyed = Vec::with_capacity(rows.len());
    for row in &rows {
        let key = match column.kind {
            ColumnKind::Int => row.try_get::<i64, _>("paging_sort")?.to_string(),
            ColumnKind::Text | ColumnKind::Date => row.try_get::<String, _>("paging_sort")?,
        };
        let row_id: String = row.try_get("paging_id")?;
        keyed.push((key, row_id, T::from_row(row)?));
    }
    if fetch_ascending != (order == Order::Asc) {
        keyed.reverse();
    }

    // Rows before the first item and after the last one, in the requested order. The page is
    // contiguous, so total = before + page + after: one scan counts the total and the rows
    // after the page, and a first page (no bound) has nothing before it, so it counts the
    // total only (the resource list's usual request, an index-only count).
    let after_op = if order == Order::Asc { ">" } else { "<" };
    let bounded_page = req.start.is_some() || req.end.is_some();
    let after_side = match keyed.last() {
        Some((lk, lid, _)) if bounded_page => {
            let mut after = Condition::default();
            push_bound(&mut after, column, view, after_op, lk, Some(lid))?;
            Some(after)
        }
        _ => None,
    };
    let (total, after) = count_rows(store, from, scope, &scope_binds, &filters, after_side.as_ref()).await?;
    let page_len = keyed.len() as u64;
    let (before, after) = match (after_side, keyed.is_empty()) {
        // Another transaction may have written between the two statements: never below zero.
        (Some(_), _) => (total.saturating_sub(page_len + after), after),
        (None, false) => (0, total.saturating_sub(page_len)),
        (None, true) if req.start.is_some() == (order == Order::Asc) && bounded_page => (total, 0),
        (None, true) if bounded_page => (0, total),
        (None, true) => (0, 0),
    };

    let mut base: Vec<(String, String)> = vec![("limit".into(), limit.to_string())];
    base.push(("sort".into(), format!("{}.{}", column.name, if order == Order::Asc { "asc" } else { "desc" })));
    base.extend(req.filters.iter().map(|(k, v)| (format!("filter.{k}"), v.clone())));
    base.extend(link_params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let link = |extra: Vec<(String, String)>| {
        let mut pairs = base.clone();
        pairs.extend(extra);
        format!("{base_path}{}", api::url::query_string(&pairs))
    };
    let mut self_extra = vec![];
    for (k, v) in [("start", &req.start), ("end", &req.end), ("first_id", &req.first_id), ("last_id", &req.last_id)] {
        if let Some(v) = v {
            self_extra.push((k.to_string(), v.clone()));
        }
    }
    let (next_bound, prev_bound) = if order == Order::Asc {
        (("start", "first_id"), ("end", "last_id"))
    } else {
        (("end", "last_id"), ("start", "first_id"))
    };
    let links = Links {
        self_: link(self_extra),
        next: (after > 0)
            .then(|| keyed.last())
            .flatten()
            .map(|(k, i, _)| link(vec![(next_bound.0.into(), k.clone()), (next_bound.1.into(), i.clone())])),
        prev: (before > 0)
            .then(|| keyed.first())
            .flatten()
            .map(|(k, i, _)| link(vec![(prev_bound.0.into(), k.clone()), (prev_bound.1.into(), i.clone())])),
        first: (before > 0).then(|| link(vec![])),
    };
    Ok(Page {
        items: keyed.into_iter().map(|(_, _, item)| item).collect(),
        links,
        metadata: PageMetadata { total, before, after, page_size: limit },
    })
}

/// Counts the rows matching `filters`, and of those the ones matching `side`. Every page of a
/// filter counts the same rows: requests in flight share that count.
async fn count_rows(
    store: &Store,
    from: &str,
    scope: &str,
    scope_binds: &[Bind],
    filters: &Condition,
    side: Option<&Condition>,
) -> Result<(u64, u64)> {
    let (condition, binds) = filters.render(scope_binds.len() + 1);
    let mut all_binds = scope_binds.to_vec();
    all_binds.extend(binds);
    let mut select = String::from("COUNT(*)");
    if let Some(side) = side {
        let (sql, side_binds) = side.render(all_binds.len() + 1);
        select.push_str(&format!(", COALESCE(SUM(CASE WHEN {sql} THEN 1 ELSE 0 END), 0)"));
        all_binds.extend(side_binds);
    }
    let sql = format!("SELECT {select} FROM {from} WHERE ({scope}) AND {condition}");
    let counts = store.shared_counts(Statement { sql, binds: all_binds }).await?;
    let count = |i: usize| counts.get(i).map_or(0, |n| (*n).max(0) as u64);
    Ok((count(0), count(1)))
}

/// `(value, id) op (bound, bound_id)` in ascending terms; without an id only the value counts.
fn push_bound(
    cond: &mut Condition,
    column: Column,
    view: &View,
    op: &str,
    bound: &str,
    bound_id: Option<&str>,
) -> Result<()> {
    let c = column.sql;
    let id_sql = view.id_sql;
    let value = typed(column.kind, bound, "the page bound")?;
    match bound_id {
        Some(bound_id) => cond.push(
            format!("{c} {op} ? OR ({c} = ? AND {id_sql} {op} ?)"),
            vec![value.clone(), value, typed(view.id_kind, bound_id, "the page bound id")?],
        ),
        None => cond.push(format!("{c} {op} ?"), vec![value]),
    }
    Ok(())
}
