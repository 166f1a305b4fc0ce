//! The memory methods (`openhuman.memory_*`) MCP tools map onto. Each is an engine operation
//! (`openhuman_memory::ops`): its parameter schema, its check and its engine call all come from
//! the operation's types, so nothing here restates a bound.

use openhuman_memory::ops;

use super::{Method, operation};

pub(super) fn methods() -> Vec<Method> {
    vec![
        operation::<ops::Search>(),
        operation::<ops::Recall>(),
        operation::<ops::ReadChunk>(),
        operation::<ops::Browse>(),
        operation::<ops::TopEntities>(),
        operation::<ops::ListSources>(),
        operation::<ops::Fetch>(),
        operation::<ops::List>(),
        operation::<ops::History>(),
        operation::<ops::Projects>(),
    ]
}
