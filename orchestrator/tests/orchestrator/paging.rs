//! The shared paging implementation against a real database (SQLite, or PostgreSQL when
//! `INMANTA_TEST_POSTGRES` holds an admin URL), over the environment table.

use api::environment::EnvironmentCreate;
use orchestrator::Orchestrator;
use orchestrator::paging::{
    Column, ColumnKind, Filter, FilterKind, Order, PageRequest, Source, View, fetch_page, page_request,
};

const VIEW: View = View {
    sort_columns: &[
        Column { name: "name", sql: "e.name", kind: ColumnKind::Text },
        Column { name: "created", sql: "e.created", kind: ColumnKind::Date },
    ],
    default_sort: ("name", Order::Asc),
    filters: &[
        Filter { name: "name", sql: "e.name", kind: FilterKind::Partial },
        Filter { name: "halted", sql: "e.halted", kind: FilterKind::Bool },
        Filter { name: "branch", sql: "e.repo_branch", kind: FilterKind::Choice { negatable: true, values: &[] } },
        Filter { name: "created", sql: "e.created", kind: FilterKind::Range(ColumnKind::Date) },
    ],
    id_sql: "e.id",
    id_kind: ColumnKind::Text,
};

#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
struct Row {
    name: String,
}

async fn open() -> (Orchestrator, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = orchestrator::testing::fresh_database_url(dir.path()).await.unwrap();
    (Orchestrator::open(&url).await.unwrap(), dir)
}

async fn create(o: &Orchestrator, project: uuid::Uuid, name: &str, branch: &str) {
    let repository = (!branch.is_empty()).then(|| "repo".to_string());
    let branch = (!branch.is_empty()).then(|| branch.to_string());
    o.create_environment(EnvironmentCreate {
        project_id: project,
        name: name.into(),
        repository,
        branch,
        ..Default::default()
    })
    .await
    .unwrap();
}

fn query(link: &str) -> PageRequest {
    let query = link.split_once('?').unwrap().1;
    let pairs: Vec<(String, String)> = query
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.replace("%3A", ":").replace("%2B", "+"))
        })
        .collect();
    page_request(&pairs).unwrap()
}

async fn page(o: &Orchestrator, project: uuid::Uuid, req: &PageRequest) -> orchestrator::paging::Page<Row> {
    let scope_binds = [project.to_string()];
    let source = Source {
        select: "e.name",
        from: "environment e",
        scope: "e.project_id = $1",
        scope_binds: &scope_binds,
        base_path: "/api/v2/test",
    };
    fetch_page(o.store(), &VIEW, req, source).await.unwrap()
}

#[tokio::test]
async fn pages_forward_and_back_without_loss_or_repeats_while_rows_arrive() {
    let (o, _dir) = open().await;
    let project = o.create_project("p", None).await.unwrap().id;
    let other = o.create_project("other", None).await.unwrap().id;
    create(&o, other, "not-in-scope", "").await;
    for i in 0..23 {
        create(&o, project, &format!("env-{i:02}"), if i % 3 == 0 { "main" } else { "dev" }).await;
    }

    for order in ["asc", "desc"] {
        let project = o.create_project(&format!("paged-{order}"), None).await.unwrap().id;
        for i in 0..23 {
            create(&o, project, &format!("env-{i:02}"), "").await;
        }
        let mut req = PageRequest { limit: Some(5), sort: Some(format!("name.{order}")), ..Default::default() };
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let p = page(&o, project, &req).await;
            assert_eq!(p.metadata.page_size, 5);
            let late = usize::from(pages >= 2);
            assert_eq!(p.metadata.before as usize, seen.len() + late, "before counts what sorts earlier");
            seen.extend(p.items.iter().map(|r| r.name.clone()));
            pages += 1;
            if pages == 2 {
                // A row that sorts before the cursor must not shift later pages.
                create(&o, project, if order == "asc" { "aaa-late" } else { "zzz-late" }, "").await;
            }
            match p.links.next {
                Some(next) => {
                    assert!(p.metadata.after > 0);
                    req = query(&next);
                }
                None => {
                    assert_eq!(p.metadata.after, 0);
                    break;
                }
            }
        }
        let mut expected: Vec<String> = (0..23).map(|i| format!("env-{i:02}")).collect();
        if order == "desc" {
            expected.reverse();
        }
        assert_eq!(seen, expected, "{order}: every row exactly once, in order");
        assert_eq!(pages, 5);
    }

    // Back from the third page (of the first project) to the second with `prev`.
    let first = page(&o, project, &PageRequest { limit: Some(5), ..Default::default() }).await;
    let second = page(&o, project, &query(first.links.next.as_ref().unwrap())).await;
    let third = page(&o, project, &query(second.links.next.as_ref().unwrap())).await;
    assert!(third.links.first.is_some());
    let back = page(&o, project, &query(third.links.prev.as_ref().unwrap())).await;
    assert_eq!(back.items, second.items);
    assert_eq!(first.metadata.total, 23, "only the rows in scope");
}

#[tokio::test]
async fn filters_combine_and_bad_requests_say_what_is_valid() {
    let (o, _dir) = open().await;
    let project = o.create_project("p", None).await.unwrap().id;
    for (name, branch) in [("web-prod", "main"), ("web-dev", "dev"), ("db-prod", "main"), ("DB-test", "test")] {
        create(&o, project, name, branch).await;
    }
    let filtered = |filters: &[(&str, &str)]| PageRequest {
        filters: filters.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let names = |p: orchestrator::paging::Page<Row>| p.items.into_iter().map(|r| r.name).collect::<Vec<_>>();
    assert_eq!(
        names(page(&o, project, &filtered(&[("name", "db")])).await),
        ["DB-test", "db-prod"],
        "partial, case-insensitive"
    );
    assert_eq!(names(page(&o, project, &filtered(&[("name", "web"), ("branch", "main")])).await), ["web-prod"]);
    assert_eq!(
        names(page(&o, project, &filtered(&[("branch", "dev"), ("branch", "test")])).await),
        ["DB-test", "web-dev"]
    );
    assert_eq!(names(page(&o, project, &filtered(&[("branch", "!main")])).await), ["DB-test", "web-dev"]);
    o.set_halted(o.list_environments().await.unwrap().iter().find(|e| e.name == "web-dev").unwrap().id, true)
        .await
        .unwrap();
    assert_eq!(names(page(&o, project, &filtered(&[("halted", "true")])).await), ["web-dev"]);
    assert_eq!(
        names(
            page(
                &o,
                project,
                &filtered(&[("created", "ge:2000-01-01T00:00:00"), ("created", "lt:2999-01-01T00:00:00.000000")])
            )
            .await
        )
        .len(),
        4
    );
    assert!(names(page(&o, project, &filtered(&[("created", "lt:2000-01-01T00:00:00")])).await).is_empty());

    let fails = |req: PageRequest| {
        let o = o.clone();
        async move {
            match fetch_page::<Row>(
                o.store(),
                &VIEW,
                &req,
                Source { select: "e.name", from: "environment e", scope: "1 = 1", scope_binds: &[], base_path: "/x" },
            )
            .await
            {
                Err(orchestrator::Error::BadRequest(m)) => m,
                other => panic!("expected a bad request, got {:?}", other.map(|p| p.items)),
            }
        }
    };
    assert!(fails(filtered(&[("colour", "red")])).await.contains("name, halted, branch, created"));
    assert!(
        fails(PageRequest { sort: Some("colour.asc".into()), ..Default::default() }).await.contains("name, created")
    );
    assert!(fails(PageRequest { sort: Some("name.up".into()), ..Default::default() }).await.contains("asc or desc"));
    assert!(fails(PageRequest { limit: Some(1001), ..Default::default() }).await.contains("1000"));
    assert!(
        fails(PageRequest { start: Some("a".into()), end: Some("b".into()), ..Default::default() })
            .await
            .contains("not both")
    );
    assert!(fails(filtered(&[("halted", "maybe")])).await.contains("true or false"));
    assert!(fails(filtered(&[("created", "soon")])).await.contains("lt:"));
}
