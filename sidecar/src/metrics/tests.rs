//! The exposition of `Metrics`: every series with its labels, HELP and TYPE.

use super::*;

/// The value of the sample `series` (name and labels exactly as exposed).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn counts_are_exposed_with_their_labels() {
    let m = Metrics::new();
    m.request(Route::Lookup, 200, None);
    m.request(Route::Lookup, 200, None);
    m.request(Route::Lookup, 402, Some(ErrorCode::QuotaExceeded));
    m.request(Route::Page, 404, None);
    m.lookup_latency(Duration::from_millis(3));
    m.cache.hits.inc();
    m.dns_query(QueryType::Mx).finish(Some(DnsErrorKind::Servfail));
    m.dns_query(QueryType::A).finish(None);
    drop(m.dns_query(QueryType::Ptr)); // abandoned: a timeout
    m.verdict(Verdict::Safe, VerdictSource::Rules);
    m.verdict(Verdict::Disposable, VerdictSource::Reviewer);
    m.store_error();
    let text = m.encode();
    let check = |series: &str, want: f64| assert_eq!(sample(&text, series), Some(want), "{series}\n{text}");
    check(r#"email_verdict_requests_total{route="lookup",status="200",code="ok"}"#, 2.0);
    check(r#"email_verdict_requests_total{route="lookup",status="402",code="quota_exceeded"}"#, 1.0);
    check(r#"email_verdict_requests_total{route="lookup",status="429",code="rate_limit_exceeded"}"#, 0.0);
    check(r#"email_verdict_requests_total{route="page",status="404",code=""}"#, 1.0);
    check(r#"email_verdict_lookup_duration_seconds_bucket{le="0.0025"}"#, 0.0);
    check(r#"email_verdict_lookup_duration_seconds_bucket{le="0.005"}"#, 1.0);
    check("email_verdict_lookup_duration_seconds_count", 1.0);
    check("email_verdict_mx_cache_hits_total", 1.0);
    check("email_verdict_mx_cache_misses_total", 0.0);
    check(r#"email_verdict_dns_queries_total{type="mx"}"#, 1.0);
    check(r#"email_verdict_dns_queries_total{type="a"}"#, 1.0);
    check(r#"email_verdict_dns_errors_total{type="mx",kind="servfail"}"#, 1.0);
    check(r#"email_verdict_dns_errors_total{type="a",kind="timeout"}"#, 0.0);
    check(r#"email_verdict_dns_errors_total{type="ptr",kind="timeout"}"#, 1.0);
    check(r#"email_verdict_verdicts_total{verdict="safe",source="rules"}"#, 1.0);
    check(r#"email_verdict_verdicts_total{verdict="disposable",source="reviewer"}"#, 1.0);
    check(r#"email_verdict_verdicts_total{verdict="disposable",source="strong_list"}"#, 0.0);
    check("email_verdict_store_errors_total", 1.0);
    check(r#"email_verdict_warmup_domains_total{outcome="learned"}"#, 0.0);
    check("email_verdict_warmup_remaining", 0.0);
    check(r#"email_verdict_ext_authz_checks_total{outcome="failed"}"#, 0.0);
    check(r#"email_verdict_ext_authz_checks_total{outcome="would_block"}"#, 0.0);
    check(r#"email_verdict_ext_authz_would_block_total{reason="disposable"}"#, 0.0);
    m.list_known(0, "blocklist", 3600);
    m.list_loaded(0, "blocklist", 12, Some(1_795_330_023));
    m.list_failed(0, "blocklist");
    let text = m.encode();
    let check = |series: &str, want: f64| assert_eq!(sample(&text, series), Some(want), "{series}\n{text}");
    check(r#"email_verdict_list_entries{list="0",kind="blocklist"}"#, 12.0);
    check(r#"email_verdict_list_last_success_timestamp_seconds{list="0",kind="blocklist"}"#, 1_795_330_023.0);
    check(r#"email_verdict_list_failures_total{list="0",kind="blocklist"}"#, 1.0);
    check(r#"email_verdict_list_refresh_seconds{list="0",kind="blocklist"}"#, 3600.0);
    m.plans_known(["free", "gateway"]);
    m.plan_rejection("gateway", PlanLimit::Burst);
    m.review_queue(42, 10_000);
    assert_eq!((m.ranking_dropped(), m.ranking_dropped()), (1, 2), "the total so far");
    let text = m.encode();
    let check = |series: &str, want: f64| assert_eq!(sample(&text, series), Some(want), "{series}\n{text}");
    check(r#"email_verdict_plan_rejections_total{plan="gateway",limit="burst"}"#, 1.0);
    check(r#"email_verdict_plan_rejections_total{plan="gateway",limit="quota"}"#, 0.0);
    check(r#"email_verdict_plan_rejections_total{plan="free",limit="quota"}"#, 0.0);
    check("email_verdict_review_queue_entries", 42.0);
    check("email_verdict_review_queue_capacity", 10_000.0);
    check("email_verdict_signup_rankings_dropped_total", 2.0);
    // Every call series from the start; no journal series on a store without one.
    check(r#"email_verdict_lease_store_calls_total{kind="give_back",outcome="error"}"#, 0.0);
    assert!(!text.contains("email_verdict_lease_journal_enabled{"), "{text}");
    let leases = m.lease_counters();
    leases.lease_ok.inc();
    leases.give_back_error.inc();
    leases.units_granted.inc_by(40);
    leases.units_given_back.inc_by(7);
    m.leases_held(&LeaseHeld { keys: 2, units: 33, places: 5, pending: 1, journal: Some(false) });
    let text = m.encode();
    let check = |series: &str, want: f64| assert_eq!(sample(&text, series), Some(want), "{series}\n{text}");
    check(r#"email_verdict_lease_store_calls_total{kind="lease",outcome="ok"}"#, 1.0);
    check(r#"email_verdict_lease_store_calls_total{kind="lease",outcome="error"}"#, 0.0);
    check(r#"email_verdict_lease_store_calls_total{kind="give_back",outcome="error"}"#, 1.0);
    check("email_verdict_lease_units_granted_total", 40.0);
    check("email_verdict_lease_places_granted_total", 0.0);
    check("email_verdict_lease_units_given_back_total", 7.0);
    check("email_verdict_lease_keys", 2.0);
    check("email_verdict_lease_units_held", 33.0);
    check("email_verdict_lease_places_held", 5.0);
    check("email_verdict_lease_give_backs_pending", 1.0);
    check(r#"email_verdict_lease_journal_enabled{store="sqlite"}"#, 0.0);
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn every_metric_has_help_and_type() {
    let m = Metrics::new();
    m.list_known(0, "disposable", 0); // the list families show once a list exists
    m.plans_known(["free"]); // and the rejections' once a plan is known (the limiter's start)
    m.leases_held(&LeaseHeld { journal: Some(true), ..LeaseHeld::default() }); // and the journal's on SQLite
    let text = m.encode();
    let families: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
    assert_eq!(families.len(), 37, "{text}");
    for family in families {
        let name = family.split(' ').next().unwrap_or_default();
        assert!(text.contains(&format!("# HELP {name} ")), "no HELP for {name}\n{text}");
    }
}
