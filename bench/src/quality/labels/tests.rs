use std::collections::HashSet;

use super::*;

fn source(name: &str, tier: Tier, names: &[&str]) -> Source {
    Source { name: name.into(), tier, provenance: String::new(), names: names.iter().map(|n| n.to_string()).collect() }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn sizes(strong: usize, weak: usize, cluster: usize, weak_per_cluster: usize) -> Sizes {
    Sizes { academic: None, strong, weak, cluster, weak_per_cluster, subdomains: 0, seed: 1 }
}

/// Sources: 0 = strong "ded", 1 = weak "mc".
fn labelled(swot: &[&str], free: &[&str], ded: &[&str], mc: &[&str], sizes: &Sizes) -> Labelled {
    let sources = [source("ded", Tier::Strong, ded), source("mc", Tier::Weak, mc)];
    let (swot, free, relay) = (strings(swot), strings(free), strings(&["duck.com"]));
    build(&Inputs { swot: &swot, free: &free, relay: &relay, sources: &sources }, sizes)
}

fn set_of(l: &Labelled, name: &str) -> Option<Set> {
    l.entries.iter().find(|e| e.name == name).map(|e| e.set)
}

fn entry<'a>(l: &'a Labelled, name: &str) -> &'a Entry {
    l.entries.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("{name} not labelled"))
}

#[test]
fn weak_listed_legitimate_names_stay_legitimate_and_strong_listed_academic_ones_move() {
    let l = labelled(
        &["nus.edu.sg", "uni.edu", "cs.lapsed.edu", "plain.edu"],
        &["hush.com"],
        &["lapsed.edu"],
        &["uni.edu", "hush.com"],
        &sizes(10, 10, 4, 1),
    );
    let check = [
        ("nus.edu.sg", Some(Set::HardCase)),
        ("hush.com", Some(Set::HardCase)),
        ("vfemail.net", Some(Set::HardCase)),
        ("duck.com", Some(Set::Relay)),
        ("uni.edu", Some(Set::Academic)),
        ("plain.edu", Some(Set::Academic)),
        // Listed through its parent by a strong source.
        ("cs.lapsed.edu", Some(Set::Strong)),
        // Registrable and strong-listed: sampled as strong.
        ("lapsed.edu", Some(Set::Strong)),
    ];
    for (name, want) in check {
        assert_eq!(set_of(&l, name), want, "{name}");
    }
    assert_eq!(entry(&l, "uni.edu").sources, 0b10);
    assert!(l.notes.iter().any(|n| n.contains("cs.lapsed.edu")), "{:?}", l.notes);
}

#[test]
fn free_beats_academic_and_listings_and_every_name_is_labelled_once() {
    let l = labelled(&["both.edu", "both.com"], &["both.com"], &["both.com"], &["both.edu"], &sizes(10, 10, 4, 1));
    assert_eq!(set_of(&l, "both.com"), Some(Set::Free));
    assert_eq!(set_of(&l, "both.edu"), Some(Set::Academic));
    let names: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), names.iter().collect::<HashSet<_>>().len(), "{names:?}");
}

#[test]
fn strong_clusters_carry_weak_riders_and_weak_only_clusters_stay_apart() {
    let ded: Vec<String> = (0..8).map(|i| format!("strong{i}.com")).collect();
    let mc: Vec<String> = (0..10).map(|i| format!("weak{i}.com")).chain(["strong0.com".into()]).collect();
    let ded: Vec<&str> = ded.iter().map(String::as_str).collect();
    let mc: Vec<&str> = mc.iter().map(String::as_str).collect();
    let l = labelled(&[], &[], &ded, &mc, &sizes(8, 4, 4, 2));
    assert_eq!(l.count(Set::Strong), 8);
    assert_eq!(l.count(Set::WeakOnDisposableMx), 4, "2 clusters x 2 riders");
    assert_eq!(l.count(Set::WeakOnly), 4);
    // Listed by both tiers: strong, never weak-only.
    assert_eq!(set_of(&l, "strong0.com"), Some(Set::Strong));
    let hosts = |set: Set| l.entries.iter().filter(|e| e.set == set).map(|e| e.mx.clone()).collect::<HashSet<_>>();
    assert_eq!(hosts(Set::Strong).len(), 2, "8 names in clusters of 4");
    assert!(hosts(Set::WeakOnDisposableMx).is_subset(&hosts(Set::Strong)));
    assert!(hosts(Set::WeakOnly).is_disjoint(&hosts(Set::Strong)));
    for host in hosts(Set::Strong) {
        let on: Vec<&Entry> = l.entries.iter().filter(|e| e.mx == host).collect();
        assert_eq!(on.iter().filter(|e| e.set == Set::Strong).count(), 4, "{host}");
        assert!(on.iter().all(|e| e.ip == on[0].ip), "one address per host");
    }
}

#[test]
fn legitimate_names_get_their_own_server_except_the_cock_li_family() {
    let l = labelled(&["a.edu", "b.edu"], &["cock.li"], &[], &["airmail.cc"], &sizes(1, 1, 1, 0));
    let (a, b) = (entry(&l, "a.edu"), entry(&l, "b.edu"));
    assert_eq!(a.mx, "mx.a.edu");
    assert_ne!(a.ip, b.ip);
    assert_eq!(entry(&l, "cock.li").mx, COCK_LI_MX);
    assert_eq!(entry(&l, "airmail.cc").mx, COCK_LI_MX);
    assert_eq!(set_of(&l, "airmail.cc"), Some(Set::HardCase));
    // A cock.li domain no list carries tells nothing: left out.
    assert_eq!(set_of(&l, "goat.si"), None);
}

#[test]
fn the_order_is_fixed_by_the_seed() {
    let ded: Vec<String> = (0..50).map(|i| format!("s{i}.com")).collect();
    let ded: Vec<&str> = ded.iter().map(String::as_str).collect();
    let pick = |seed| {
        let l = labelled(&[], &[], &ded, &[], &Sizes { seed, ..sizes(5, 0, 5, 0) });
        l.entries.iter().filter(|e| e.set == Set::Strong).map(|e| e.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(pick(1), pick(1));
    assert_ne!(pick(1), pick(2));
    assert_eq!(rank(0, "a"), rank(0, "a"));
}

#[test]
fn subdomains_of_strong_names_go_to_the_parents_server_or_their_own() {
    let ded: Vec<String> = (0..8).map(|i| format!("s{i}.com")).collect();
    let ded: Vec<&str> = ded.iter().map(String::as_str).collect();
    let l = labelled(&[], &[], &ded, &[], &Sizes { subdomains: 2, ..sizes(8, 0, 4, 0) });
    let on_parent: Vec<&Entry> = l.entries.iter().filter(|e| e.set == Set::SubdomainOnParentMx).collect();
    let own: Vec<&Entry> = l.entries.iter().filter(|e| e.set == Set::SubdomainOwnMx).collect();
    assert_eq!((on_parent.len(), own.len()), (2, 2));
    for e in on_parent {
        let parent = entry(&l, e.name.strip_prefix("x7.").expect("x7. prefix"));
        assert_eq!((&e.mx, e.ip, e.sources), (&parent.mx, parent.ip, 0b01), "{}", e.name);
    }
    for e in own {
        let parent = entry(&l, e.name.strip_prefix("own.").expect("own. prefix"));
        assert_eq!(e.mx, format!("mx.{}", e.name));
        assert_ne!(e.ip, parent.ip);
        assert_eq!(e.sources, 0b01, "listed through its parent");
    }
}
