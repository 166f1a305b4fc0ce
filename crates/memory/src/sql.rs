//! Small SQL helpers every module that queries may use; depends on no other module.

use std::rc::Rc;

use rusqlite::types::Value as SqlValue;

/// A list bound as one parameter, for `rowid IN rarray(?1)` (SQLite's `carray`-like table
/// function, enabled on every connection).
pub(crate) fn rarray<T: Into<SqlValue> + Clone>(items: &[T]) -> Rc<Vec<SqlValue>> {
    Rc::new(items.iter().cloned().map(Into::into).collect())
}
