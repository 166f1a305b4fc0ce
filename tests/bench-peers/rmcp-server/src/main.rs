//! The HTTP benchmark's peer server: the official Rust MCP SDK (rmcp) serving one tool,
//! `core.list_tools`, over Streamable HTTP, mounted in axum on 127.0.0.1. The tool answers a fixed
//! JSON document (the daemon's own `core.list_tools` answer, read from `--payload FILE`, so both
//! sides put the same bytes on the wire), rebuilt into a result on every call the way a real tool
//! would: `structuredContent` plus the same JSON as text.
//!
//! ```text
//! rmcp-bench-peer [--port P] [--payload FILE]
//! ```
//!
//! Prints `listening on 127.0.0.1:PORT` on stdout once it accepts connections; exits when its
//! stdin closes (so a benchmark that dies takes its peer with it) or on Ctrl-C.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;

const TOOL: &str = "core.list_tools";

#[derive(Clone)]
struct Peer {
    payload: Arc<Value>,
    tool: Tool,
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-bench-peer", "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL).then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(format!("unknown tool {}", request.name), None));
        }
        Ok(CallToolResult::structured(self.payload.as_ref().clone()).into())
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("rmcp-bench-peer: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut payload = json!({"tools": [], "count": 0});
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port needs a value")?.parse()?,
            "--payload" => {
                let path = args.next().ok_or("--payload needs a file")?;
                payload = serde_json::from_slice(&std::fs::read(&path)?)?;
            }
            other => {
                return Err(
                    format!("unknown argument {other:?}; usage: rmcp-bench-peer [--port P] [--payload FILE]").into()
                );
            }
        }
    }
    let schema: Map<String, Value> =
        serde_json::from_value(json!({"type": "object", "properties": {}, "additionalProperties": false}))?;
    let tool = Tool::new(TOOL, "List the tools (a fixed document in this peer).", schema);
    let peer = Peer { payload: Arc::new(payload), tool };
    // The daemon's runtime: tokio's multi-threaded default, one worker per core.
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(serve(peer, port))
}

async fn serve(peer: Peer, port: u16) -> Result<(), Box<dyn std::error::Error>> {
    // Sessions for handshake-era clients (rmcp's default); `json_response` makes the stateless
    // path (2026-07-28 requests) answer application/json like the daemon does.
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service =
        StreamableHttpService::new(move || Ok(peer.clone()), Arc::new(LocalSessionManager::default()), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    // rmcp answers session requests as event streams written in several pieces (priming event,
    // message, end of stream); with Nagle's algorithm on, the later pieces wait for the client's
    // delayed ACK (~40 ms per call). Real deployments should turn it off; the benchmark does.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let stop = async {
        let (mut stdin, mut sink) = (tokio::io::stdin(), Vec::new());
        tokio::select! {
            _ = stdin.read_to_end(&mut sink) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    axum::serve(listener, app).with_graceful_shutdown(stop).await?;
    Ok(())
}
