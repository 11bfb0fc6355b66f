//! `nsys-explorer mcp`: the engine as Model Context Protocol tools, on stdio, for the coding
//! agent a person already asks (Claude Code, Codex, Cursor, VS Code). Built on the official
//! Rust SDK (`rmcp`) over `session` — the same open, cache and analyses as `report` and the
//! window — with the traces kept open between calls.
//!
//! Stdout belongs to the protocol: nothing else is printed there (logs go to stderr). Each
//! call runs on a blocking thread of its own, so a cheap call is answered while a 2 GB open
//! runs; a call's failure (a bad path, an unknown id, a panic) is a tool error the model
//! reads, never a dead server.

mod answers;
mod page;
mod tables;
mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

pub use tools::Traces;

/// Serves on stdin/stdout until the client closes them.
pub fn serve(no_cache: bool) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server's runtime: {e}"))?;
    runtime.block_on(async move {
        let server = Server {
            traces: Arc::new(Traces::new(no_cache)),
        };
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP session did not start: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| format!("the MCP session ended: {e}"))?;
        Ok(())
    })
}

#[derive(Clone)]
struct Server {
    traces: Arc<Traces>,
}

const INSTRUCTIONS: &str = "nsys-explorer answers questions about NVIDIA Nsight Systems profiles (exports to SQLite, or .nsys-rep) of GPU jobs, single or multi-rank. Start with open_trace (it analyses the whole run: seconds for GBs, then cached), then findings (what to fix first, each with a replayed saving). breakdown says where each GPU's time went; gaps and recurring_gaps hunt idle time with its cause; iterations and iteration find and explain slow steps; critical_path follows the chain across ranks; what_if replays the trace with a change; events zooms into a window. Times are ns on the trace's clock.";

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "nsys-explorer",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::catalogue()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // A tool that does not exist, or arguments that fail its schema: the request's
        // fault, a protocol error.
        if !tools::exists(&name) {
            return Err(ErrorData::invalid_params(format!("no tool {name:?}"), None));
        }
        tools::check(&name, &args).map_err(|e| ErrorData::invalid_params(e, None))?;
        let cancel = Arc::new(AtomicBool::new(false));
        // The client's cancellation sets the flag the engine polls.
        let watch = {
            let (ct, cancel) = (context.ct.clone(), cancel.clone());
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.store(true, Ordering::Relaxed);
            })
        };
        // Progress from the blocking thread, sent on as notifications when asked for.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(f32, String)>();
        let forward = {
            let (token, peer) = (context.meta.get_progress_token(), context.peer.clone());
            tokio::spawn(async move {
                while let Some((fraction, message)) = rx.recv().await {
                    if let Some(token) = &token {
                        let p = ProgressNotificationParam::new(token.clone(), fraction as f64)
                            .with_total(1.0)
                            .with_message(message);
                        let _ = peer.notify_progress(p).await;
                    }
                }
            })
        };
        let traces = self.traces.clone();
        let flag = cancel.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let progress = move |fraction: f32, message: &str| {
                let _ = tx.send((fraction, message.to_string()));
            };
            let hooks = tools::Hooks {
                progress: &progress,
                cancel: &flag,
            };
            tools::call(&traces, &name, &args, &hooks)
        })
        .await
        .unwrap_or_else(|e| {
            Err(match e.try_into_panic() {
                Ok(panic) => format!(
                    "internal error: {} (please report it; the server goes on)",
                    panic_text(&*panic)
                ),
                Err(_) => "the call was stopped".to_string(),
            })
        });
        watch.abort();
        let _ = forward.await;
        if cancel.load(Ordering::Relaxed) {
            return Ok(error("cancelled").into());
        }
        Ok(match answer {
            Ok(a) => result(a),
            Err(e) => error(&e),
        }
        .into())
    }
}

/// An answer as a tool result: its JSON as structured content, and as text items its
/// summary and the JSON (for clients that read text only), an image when it is one.
fn result(a: answers::Answer) -> CallToolResult {
    let mut r = CallToolResult::structured(a.json.clone());
    let mut content = vec![ContentBlock::text(a.summary)];
    if let Some(png) = &a.png {
        let data = base64::engine::general_purpose::STANDARD.encode(png);
        content.push(ContentBlock::image(data, "image/png"));
    }
    content.push(ContentBlock::text(a.json.to_string()));
    r.content = content;
    r
}

/// A tool error: the model reads the message and can try again.
fn error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_string())])
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
