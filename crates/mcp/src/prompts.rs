//! Prompts and completion: the shapes of `prompts/list`, the checks of `prompts/get` and
//! `completion/complete` params against what the app declares, and the completion result's cap.
//! The app supplies the prompts and their text and the candidate values; everything a client can
//! get wrong (an unknown prompt, a missing required argument, an argument the prompt or template
//! does not have) is answered here with -32602, before the app is asked.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::app::ResourceTemplate;
use crate::protocol::RpcError;

/// Most values one `completion/complete` result carries (the spec's bound).
pub const MAX_COMPLETIONS: usize = 100;

/// One entry of `prompts/list`.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: String,
    pub title: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt. Every value is a string on the wire.
#[derive(Debug, Clone)]
pub struct PromptArgument {
    pub name: &'static str,
    pub description: String,
    pub required: bool,
}

impl Prompt {
    pub fn to_json(&self) -> Value {
        let args: Vec<Value> = self
            .arguments
            .iter()
            .map(|a| json!({ "name": a.name, "description": a.description, "required": a.required }))
            .collect();
        json!({ "name": self.name, "title": self.title, "description": self.description, "arguments": args })
    }
}

/// What `prompts/get` returns: a description and the messages, each a `PromptMessage`
/// (build them with [`user_text`] and [`user_resource`]).
#[derive(Debug, Clone)]
pub struct PromptResult {
    pub description: String,
    pub messages: Vec<Value>,
}

impl PromptResult {
    pub fn to_json(&self) -> Value {
        json!({ "description": self.description, "messages": self.messages })
    }
}

/// A user message of plain text.
pub fn user_text(text: impl Into<String>) -> Value {
    json!({ "role": "user", "content": { "type": "text", "text": text.into() } })
}

/// A user message embedding a resource's text.
pub fn user_resource(uri: &str, mime_type: &str, text: impl Into<String>) -> Value {
    json!({ "role": "user", "content": { "type": "resource",
        "resource": { "uri": uri, "mimeType": mime_type, "text": text.into() } } })
}

/// The arguments of a `prompts/get`, checked against the prompt they name: every key is one of
/// its arguments, every value a string, every required one present and not blank.
pub fn get_params(
    params: &Map<String, Value>,
    prompts: &[Prompt],
) -> Result<(String, BTreeMap<String, String>), RpcError> {
    let name = match params.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.as_str(),
        Some(Value::String(_)) => return Err(RpcError::invalid_params("`params.name` must not be blank")),
        Some(_) => return Err(RpcError::invalid_params("`params.name` must be a string naming a prompt")),
        None => return Err(RpcError::invalid_params("missing `params.name`: the prompt to get")),
    };
    let prompt = find(prompts, name)?;
    let given = string_map(params.get("arguments"), "params.arguments")?;
    for key in given.keys() {
        if !prompt.arguments.iter().any(|a| a.name == key) {
            return Err(RpcError::invalid_params(format!(
                "prompt `{name}` has no argument `{key}`; its arguments: {}",
                names(prompt)
            ))
            .with_data(json!({ "prompt": name, "argument": key })));
        }
    }
    for a in prompt.arguments.iter().filter(|a| a.required) {
        if given.get(a.name).is_none_or(|v| v.trim().is_empty()) {
            return Err(RpcError::invalid_params(format!(
                "missing required argument `{}` of prompt `{name}`: {}",
                a.name, a.description
            ))
            .with_data(json!({ "prompt": name, "argument": a.name })));
        }
    }
    Ok((name.to_string(), given))
}

fn find<'a>(prompts: &'a [Prompt], name: &str) -> Result<&'a Prompt, RpcError> {
    prompts.iter().find(|p| p.name == name).ok_or_else(|| {
        RpcError::invalid_params(format!("unknown prompt `{name}`: prompts/list shows the available ones"))
            .with_data(json!({ "prompt": name }))
    })
}

fn names(prompt: &Prompt) -> String {
    if prompt.arguments.is_empty() {
        return "none".to_string();
    }
    prompt.arguments.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// An optional object whose values are all strings.
fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, RpcError> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(RpcError::invalid_params(format!("`{what}` must be an object of string values"))),
    };
    obj.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(RpcError::invalid_params(format!("`{what}.{k}` must be a string"))),
        })
        .collect()
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the resource template with this `uriTemplate`.
    Resource(String),
}

/// A checked `completion/complete` request.
#[derive(Debug, Clone)]
pub struct CompleteRequest {
    pub reference: CompletionRef,
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user has typed so far.
    pub value: String,
    /// Arguments already chosen (`context.arguments`).
    pub context: BTreeMap<String, String>,
}

/// The app's candidates, best first. `total` counts every match when the app knows more than
/// it returned; the protocol layer caps the values at [`MAX_COMPLETIONS`].
#[derive(Debug, Clone, Default)]
pub struct Completion {
    pub values: Vec<String>,
    pub total: Option<u64>,
}

impl Completion {
    /// The `completion` object: at most [`MAX_COMPLETIONS`] values, `total` at least as many
    /// as were found, `hasMore` when any were left out.
    pub fn to_json(mut self) -> Value {
        let found = self.values.len() as u64;
        let total = self.total.unwrap_or(found).max(found);
        self.values.truncate(MAX_COMPLETIONS);
        let has_more = total > self.values.len() as u64;
        json!({ "completion": { "values": self.values, "total": total, "hasMore": has_more } })
    }
}

/// The params of a `completion/complete`, checked against the app's prompts and templates.
pub fn complete_params(
    params: &Map<String, Value>,
    prompts: &[Prompt],
    templates: &[ResourceTemplate],
) -> Result<CompleteRequest, RpcError> {
    let Some(Value::Object(r)) = params.get("ref") else {
        return Err(RpcError::invalid_params(
            "missing `params.ref`: {\"type\": \"ref/prompt\", \"name\": ..} or {\"type\": \"ref/resource\", \"uri\": ..}",
        ));
    };
    let Some(Value::Object(arg)) = params.get("argument") else {
        return Err(RpcError::invalid_params("missing `params.argument`: {\"name\": .., \"value\": ..}"));
    };
    let (Some(Value::String(argument)), Some(Value::String(value))) = (arg.get("name"), arg.get("value")) else {
        return Err(RpcError::invalid_params("`params.argument` needs a string `name` and a string `value`"));
    };
    let context = match params.get("context") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(c)) => string_map(c.get("arguments"), "params.context.arguments")?,
        Some(_) => return Err(RpcError::invalid_params("`params.context` must be an object")),
    };
    let text = |k: &str| r.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let reference = match r.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = text("name").ok_or_else(|| RpcError::invalid_params("`ref.name` must name a prompt"))?;
            let prompt = find(prompts, name)?;
            if !prompt.arguments.iter().any(|a| a.name == argument) {
                return Err(RpcError::invalid_params(format!(
                    "prompt `{name}` has no argument `{argument}`; its arguments: {}",
                    names(prompt)
                )));
            }
            CompletionRef::Prompt(name.to_string())
        }
        Some("ref/resource") => {
            let uri = text("uri").ok_or_else(|| RpcError::invalid_params("`ref.uri` must be a URI template"))?;
            let Some(t) = templates.iter().find(|t| t.uri_template == uri) else {
                return Err(RpcError::invalid_params(format!(
                    "no resource template `{uri}`: resources/templates/list shows the available ones"
                ))
                .with_data(json!({ "uri": uri })));
            };
            let vars = template_variables(&t.uri_template);
            if !vars.iter().any(|v| v == argument) {
                return Err(RpcError::invalid_params(format!(
                    "resource template `{uri}` has no variable `{argument}`; its variables: {}",
                    vars.join(", ")
                )));
            }
            CompletionRef::Resource(uri.to_string())
        }
        _ => return Err(RpcError::invalid_params("`ref.type` must be \"ref/prompt\" or \"ref/resource\"")),
    };
    Ok(CompleteRequest { reference, argument: argument.clone(), value: value.clone(), context })
}

/// The variable names of an RFC 6570 template (operators and modifiers stripped).
pub fn template_variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let expr = rest[open + 1..open + close].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expr.split(',') {
            let var = var.trim_end_matches('*');
            let var = var.split(':').next().unwrap_or_default();
            if !var.is_empty() {
                out.push(var.to_string());
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts() -> Vec<Prompt> {
        vec![Prompt {
            name: "p".into(),
            title: "P".into(),
            description: "d".into(),
            arguments: vec![
                PromptArgument { name: "topic", description: "What about.".into(), required: true },
                PromptArgument { name: "budget", description: "How much.".into(), required: false },
            ],
        }]
    }

    fn templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "x://item/{id}".into(),
            name: "item".into(),
            title: "Item".into(),
            description: "d".into(),
            mime_type: "text/plain",
        }]
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn get_params_name_what_is_wrong() {
        let p = prompts();
        let err = |v: Value| get_params(&obj(v), &p).unwrap_err();
        let e = err(json!({"name": "nope"}));
        assert!(e.code == -32602 && e.message.contains("unknown prompt `nope`"), "{e:?}");
        let e = err(json!({"name": "p"}));
        assert!(e.message.contains("missing required argument `topic`"), "{e:?}");
        let e = err(json!({"name": "p", "arguments": {"topic": "  "}}));
        assert!(e.message.contains("missing required argument `topic`"), "{e:?}");
        let e = err(json!({"name": "p", "arguments": {"topic": "x", "colour": "red"}}));
        assert!(e.message.contains("no argument `colour`") && e.message.contains("topic, budget"), "{e:?}");
        let e = err(json!({"name": "p", "arguments": {"topic": 5}}));
        assert!(e.message.contains("`params.arguments.topic` must be a string"), "{e:?}");
        let (name, args) = get_params(&obj(json!({"name": "p", "arguments": {"topic": "x"}})), &p).unwrap();
        assert_eq!((name.as_str(), args["topic"].as_str()), ("p", "x"));
    }

    #[test]
    fn complete_params_check_the_reference_and_argument() {
        let (p, t) = (prompts(), templates());
        let check = |v: Value| complete_params(&obj(v), &p, &t);
        let ok =
            check(json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "topic", "value": "ab"},
            "context": {"arguments": {"budget": "5"}}}))
            .unwrap();
        assert_eq!(ok.reference, CompletionRef::Prompt("p".into()));
        assert_eq!((ok.value.as_str(), ok.context["budget"].as_str()), ("ab", "5"));
        let ok = check(
            json!({"ref": {"type": "ref/resource", "uri": "x://item/{id}"}, "argument": {"name": "id", "value": ""}}),
        )
        .unwrap();
        assert_eq!(ok.reference, CompletionRef::Resource("x://item/{id}".into()));
        for (bad, says) in [
            (
                json!({"ref": {"type": "ref/prompt", "name": "q"}, "argument": {"name": "topic", "value": ""}}),
                "unknown prompt",
            ),
            (
                json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "zz", "value": ""}}),
                "no argument `zz`",
            ),
            (
                json!({"ref": {"type": "ref/resource", "uri": "x://other/{id}"}, "argument": {"name": "id", "value": ""}}),
                "no resource template",
            ),
            (
                json!({"ref": {"type": "ref/resource", "uri": "x://item/{id}"}, "argument": {"name": "n", "value": ""}}),
                "no variable `n`",
            ),
            (json!({"ref": {"type": "ref/tool", "name": "p"}, "argument": {"name": "topic", "value": ""}}), "ref.type"),
            (json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "topic"}}), "string `value`"),
            (json!({"argument": {"name": "topic", "value": ""}}), "missing `params.ref`"),
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.code == -32602 && e.message.contains(says), "{says}: {e:?}");
        }
    }

    #[test]
    fn completions_are_capped_with_total_and_has_more() {
        let many = Completion { values: (0..150).map(|i| i.to_string()).collect(), total: None };
        let j = many.to_json();
        assert_eq!(j["completion"]["values"].as_array().unwrap().len(), MAX_COMPLETIONS);
        assert_eq!((j["completion"]["total"].as_u64(), j["completion"]["hasMore"].as_bool()), (Some(150), Some(true)));
        let few = Completion { values: vec!["a".into()], total: Some(1) }.to_json();
        assert_eq!(few["completion"], json!({"values": ["a"], "total": 1, "hasMore": false}));
        let known_more = Completion { values: vec!["a".into()], total: Some(40) }.to_json();
        assert_eq!(known_more["completion"]["hasMore"], true);
    }

    #[test]
    fn template_variables_are_read_from_expressions() {
        assert_eq!(template_variables("x://item/{id}"), vec!["id"]);
        assert_eq!(template_variables("x://{+base}/q{?a,b*}{#frag:3}"), vec!["base", "a", "b", "frag"]);
        assert!(template_variables("x://plain").is_empty());
    }
}
