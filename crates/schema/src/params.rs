//! The [`Params`] trait and the [`params!`] macro. A parameter type is declared once, field by
//! field, each field with its schema beside it; the macro writes the struct (serde both ways)
//! and its [`ArgSpec`], with every schema field named after its struct field, so the schema a
//! client reads, the check a call passes and the struct the code receives cannot drift apart.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::args::{ArgError, ArgSpec};

/// A type whose wire form is described by an [`ArgSpec`].
pub trait Params: Sized + DeserializeOwned {
    /// The schema: rendered in `tools/list`, applied to every wire call.
    fn spec() -> ArgSpec;

    /// Validates wire arguments (absent or null = `{}`) and turns them into the type.
    fn from_args(args: &Map<String, Value>) -> Result<Self, ArgError> {
        Self::from_checked(Self::spec().validate(args)?)
    }

    /// Turns arguments [`ArgSpec::validate`] already accepted into the type. The schema and the
    /// struct come from one declaration, so this fails only when a field's Rust type is
    /// narrower than its schema; the message says so.
    fn from_checked(checked: Map<String, Value>) -> Result<Self, ArgError> {
        serde_json::from_value(Value::Object(checked))
            .map_err(|e| ArgError(format!("arguments do not fit their declared types: {e}")))
    }
}

/// Declares a parameter type: a struct whose every field carries its schema.
///
/// ```
/// openhuman_schema::params! {
///     /// Parameters of a search.
///     pub struct Search {
///         query: String = string("Keywords to search for.").required().max_chars(4096),
///         limit: i64 = int("How many hits.", 1, 50).default_int(10),
///         k as limit = int("Another name for limit.", 1, 50),
///     }
/// }
/// use openhuman_schema::Params;
/// let p = Search::from_args(serde_json::json!({"query": "kestrels", "k": 3}).as_object().unwrap()).unwrap();
/// assert_eq!(p.limit, 3);
/// ```
///
/// Each field is `name: Type = constructor(args…).builder(…)…`, where the constructor is one of
/// [`Field`](crate::Field)'s (`string`, `int`, `list`, `object`, …) without its leading name:
/// the field's own name is passed. An entry `old as name = constructor(…)…` is an alias: listed
/// in the schema at its place, accepted on the wire, handed to the struct as `name`; it is no
/// field of the struct. Attributes on a field (`#[serde(default)]` for lists) are kept on the
/// struct field. The struct derives `Debug`, `Clone`, `PartialEq`, `Default` and serde's two
/// traits, and every field is public.
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { $($body:tt)* }
    ) => {
        $crate::params!(@munch [$(#[$meta])* $vis struct $name] [] [] $($body)*);
    };
    // An alias: a schema entry only.
    (@munch $head:tt [$($fields:tt)*] [$($specs:tt)*]
        $alias:ident as $canonical:ident = $ctor:ident ( $($arg:expr),* $(,)? ) $( . $m:ident ( $($marg:expr),* $(,)? ) )*
        $(, $($rest:tt)*)?
    ) => {
        $crate::params!(@munch $head [$($fields)*] [$($specs)*
            $crate::Field::$ctor(stringify!($alias), $($arg),*) $( .$m($($marg),*) )* .alias_of(stringify!($canonical)),
        ] $($($rest)*)?);
    };
    // A field: a struct field and its schema entry.
    (@munch $head:tt [$($fields:tt)*] [$($specs:tt)*]
        $(#[$fmeta:meta])*
        $field:ident : $ty:ty = $ctor:ident ( $($arg:expr),* $(,)? ) $( . $m:ident ( $($marg:expr),* $(,)? ) )*
        $(, $($rest:tt)*)?
    ) => {
        $crate::params!(@munch $head [$($fields)* $(#[$fmeta])* pub $field: $ty,] [$($specs)*
            $crate::Field::$ctor(stringify!($field), $($arg),*) $( .$m($($marg),*) )*,
        ] $($($rest)*)?);
    };
    (@munch [$(#[$meta:meta])* $vis:vis struct $name:ident] [$($fields:tt)*] [$($specs:tt)*]) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, ::serde::Serialize, ::serde::Deserialize)]
        $vis struct $name { $($fields)* }

        impl $crate::Params for $name {
            fn spec() -> $crate::ArgSpec {
                $crate::ArgSpec::new(vec![$($specs)*])
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Params;

    params! {
        /// A parameter type of every shape the macro takes.
        struct Probe {
            query: String = string("q").required().max_chars(16),
            limit: i64 = int("l", 1, 50).default_int(10),
            k as limit = int("old name of limit", 1, 50),
            #[serde(default)]
            tags: Vec<String> = list("t", 3, 8),
            deep: Option<bool> = boolean("d"),
        }
    }

    /// The struct and its schema come from one list: same names, the check applied, the
    /// defaults and aliases resolved before the struct sees them.
    #[test]
    fn one_declaration_gives_struct_schema_and_check() {
        let spec = Probe::spec();
        let names: Vec<&str> = spec.fields.iter().map(|f| f.name).collect();
        assert_eq!(names, ["query", "limit", "k", "tags", "deep"]);
        let p = Probe::from_args(json!({"query": "x", "k": 3, "tags": ["a"]}).as_object().unwrap()).unwrap();
        assert_eq!(p, Probe { query: "x".into(), limit: 3, tags: vec!["a".into()], deep: None });
        let e = Probe::from_args(json!({"query": "x", "tags": ["a", "b", "c", "d"]}).as_object().unwrap());
        assert_eq!(e.unwrap_err().0, "argument `tags` has 4 items; the limit is 3");
        let e = Probe::from_args(json!({"query": "x", "colour": 1}).as_object().unwrap()).unwrap_err();
        assert!(e.0.starts_with("unknown argument: `colour`"), "{e}");
    }
}
