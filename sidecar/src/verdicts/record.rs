//! The lookup record: the one place it is built, for the single lookup, batch items and
//! `check` alike.

use email_verdict_core::details::{self, DomainDetails};
use email_verdict_core::{Catalog, Domain, LookupInput, LookupRecord, VerdictResult};

use super::{Judged, SharedResult};

/// The lookup record of `input` (the percent-decoded `raw` text) judged as `judged`: the one
/// builder of the single lookup's answer and of a batch item. `did_you_mean` is the suggested
/// provider for a bare domain, and for an email the same local part at it. `details`: the
/// domain's, as the verdict's catalog and MX hosts gave them ([`Judged::about`]), with the
/// input's own, and `domain_age_days` from the verdict's RDAP age when known. `mx_unavailable` says the verdict
/// came without MX data (DNS failing or too slow: `Verdicts::with_dns_deadline`). Its `result`
/// is the shared one: a batch item takes it apart with `map_result(SharedResult::into_owned)`.
pub fn record(raw: &str, input: &LookupInput, judged: Judged) -> LookupRecord<SharedResult> {
    let did_you_mean = judged.suggestion.map(|domain| match input {
        LookupInput::Domain(_) => domain.to_string(),
        LookupInput::Email(email) => format!("{}@{domain}", email.local()),
    });
    let mut details = details::details_at(input, judged.about);
    details.domain_age_days = judged.age.map(|a| a.days);
    LookupRecord {
        input: raw.to_owned(),
        input_type: input.input_type(),
        email: input.email_string(),
        domain: input.domain().to_string(),
        did_you_mean,
        mx_unavailable: judged.mx_unavailable,
        result: judged.result,
        details,
    }
}

/// What `details` says of `domain` judged as `result`: its provider as the verdict saw it.
pub(super) fn about(catalog: &Catalog, domain: &Domain, result: &VerdictResult) -> DomainDetails {
    details::domain_details(catalog, domain, result.free_provider, result.mx_records.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use email_verdict_core::verdict::decide;
    use email_verdict_core::{Domain, InputType, MxInfo, Signals, VerdictSource};

    use super::*;

    fn judged(suggestion: Option<&str>) -> Judged {
        let result = SharedResult::new(decide(&Signals::default(), &MxInfo::NoDomain, false));
        Judged {
            result,
            suggestion: suggestion.map(|s| Domain::parse(s).unwrap()),
            age: None,
            mx_unavailable: false,
            source: VerdictSource::Rules,
            mail: None,
            about: Default::default(),
        }
    }

    #[test]
    fn the_record_suggests_an_email_for_an_email_and_a_domain_for_a_domain() {
        let check = |raw: &str, suggestion: Option<&str>, expected: Option<&str>| {
            let input = LookupInput::parse(raw).unwrap();
            let record = record(raw, &input, judged(suggestion));
            assert_eq!(record.did_you_mean.as_deref(), expected, "{raw}");
            assert_eq!(record.input, raw);
            record
        };
        let r = check("Ann.Lee@GMIAL.com", Some("gmail.com"), Some("Ann.Lee@gmail.com"));
        assert_eq!(
            (r.input_type, r.email.as_str(), r.domain.as_str()),
            (InputType::Email, "Ann.Lee@gmial.com", "gmial.com")
        );
        check("gmial.com", Some("gmail.com"), Some("gmail.com"));
        check("\"ann lee\"@gmial.com", Some("gmail.com"), Some("\"ann lee\"@gmail.com"));
        check("ann@example.com", None, None);
    }
}
