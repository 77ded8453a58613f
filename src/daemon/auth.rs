//! The bearer token check in front of every route but `/health`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::state::{ApiError, AppState};

pub(super) async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // Constant time: the comparison does not reveal how much of the token matched.
        let ok: bool = given.as_bytes().ct_eq(token.as_bytes()).into();
        if !ok {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token: send Authorization: Bearer <token>",
            )
            .into_response();
        }
    }
    next.run(request).await
}
