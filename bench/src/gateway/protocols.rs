//! The wrk scripts each row runs, and the bodies of rows 16–18 (issue 43): a gRPC signup and a
//! GraphQL query that is no signup.

use serde_json::json;

/// The wrk scripts of the rows.
pub struct Scripts<'a> {
    pub post: Option<&'a std::path::Path>,
    pub post_header: Option<&'a std::path::Path>,
    pub grpc: Option<&'a std::path::Path>,
    pub graphql: Option<&'a std::path::Path>,
}

/// `SIGNUP` as one gRPC message (`email` = 1, `name` = 2), framed.
pub fn grpc_signup() -> Vec<u8> {
    let field = |n: u8, v: &str| [vec![n << 3 | 2, v.len() as u8], v.as_bytes().to_vec()].concat();
    let message = [field(1, "ann@gmail.com"), field(2, "Test User")].concat();
    [vec![0], (message.len() as u32).to_be_bytes().to_vec(), message].concat()
}

/// A GraphQL request of about 16 KB running a query (no signup operation).
pub fn graphql_query() -> String {
    let fields: String = (0..400).map(|i| format!("f{i}: profile(id: {i}) {{ id name }} ")).collect();
    json!({ "query": format!("query Dashboard {{ {fields} }}"), "variables": {} }).to_string()
}
