//! `http-token`: the bearer token HTTP clients send, the one the user chose or the generated
//! one (made and kept 0600 on first use; see `http_auth`).

use anyhow::Result;
use openhuman_common::Paths;
use openhuman_config as config;

use super::out;
use crate::{EXIT_OK, http_auth};

pub(crate) fn run(paths: &Paths) -> Result<i32> {
    let loaded = config::load(&paths.config_file)?;
    out(&http_auth::token(paths, &loaded.config, None)?.0);
    Ok(EXIT_OK)
}
