//! The workbench's own files (its style sheet and its one script), built into the binary: no
//! file is read at run time, and nothing else is served under
//! `/ui/assets/`.

/// A file the workbench serves.
pub struct Asset {
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

/// The asset called `name`, if the workbench has one.
pub fn asset(name: &str) -> Option<Asset> {
    match name {
        "workbench.css" => Some(Asset {
            content_type: "text/css; charset=utf-8",
            bytes: include_bytes!("../assets/workbench.css"),
        }),
        "workbench.js" => Some(Asset {
            content_type: "text/javascript; charset=utf-8",
            bytes: include_bytes!("../assets/workbench.js"),
        }),
        _ => None,
    }
}
