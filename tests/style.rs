//! Issue 38's rule on length: no function over [`MAX_LINES`] lines outside
//! tests and generated code, so that a change lands in a function a reader
//! can hold in their head.
//!
//! The Rust sources of every `crates/*/src` are parsed with `syn` (their
//! `#[cfg(test)]` modules and `#[test]` functions left out; generated code
//! lives in `OUT_DIR`, not under `src`). A function is measured from the
//! line of its `fn` to the line of its closing brace.
//!
//! The one exception is a data table — a function that is long because it
//! lists data, not steps. It says so with the marker [`MARKER`] on a line
//! of its own just above it (above its doc comment and attributes, or
//! between them and the `fn`).
//!
//! The JavaScript of the browser verifier (`web/verifier/*.js`, not its
//! vendored code) is held to the same length by a heuristic that relies on
//! its formatting: a function starts on a line that declares one and ends
//! at the next line, at the same indentation, that opens with `}`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The longest a function may be, in lines.
const MAX_LINES: usize = 80;

/// The comment that lets a data table be longer than [`MAX_LINES`].
const MARKER: &str = "// long: data table";

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files_with(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_with(&path, extension, out);
        } else if path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

/// Whether the attributes say test-only code: `#[test]`, `#[cfg(test)]`.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("test")
            || (attr.path().is_ident("cfg") && attr.parse_args::<syn::Ident>().is_ok_and(|ident| ident == "test"))
    })
}

/// One function found too long: where, what, how many lines.
#[derive(Debug, PartialEq)]
struct Long {
    line: usize,
    name: String,
    lines: usize,
}

/// Walks one parsed file, collecting long functions and the names of the
/// test-only modules it declares in files of their own.
struct Walker<'a> {
    lines: Vec<&'a str>,
    long: Vec<Long>,
    test_modules: Vec<String>,
    /// The type of the `impl` being walked, to name its methods.
    owner: Option<String>,
}

impl<'a> Walker<'a> {
    fn new(source: &'a str) -> Self {
        Walker { lines: source.lines().collect(), long: Vec::new(), test_modules: Vec::new(), owner: None }
    }

    /// Whether [`MARKER`] stands on a line between `first` (the item's first
    /// line, attributes included) minus one and the `fn` line.
    fn marked(&self, first: usize, fn_line: usize) -> bool {
        (first.saturating_sub(1).max(1)..fn_line)
            .any(|line| self.lines.get(line - 1).is_some_and(|text| text.trim() == MARKER))
    }

    fn measure(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, block: &syn::Block) {
        if test_only(attrs) {
            return;
        }
        let fn_line = sig.fn_token.span.start().line;
        let first = attrs.iter().map(|attr| attr.span().start().line).min().unwrap_or(fn_line).min(fn_line);
        let last = block.brace_token.span.close().end().line;
        let lines = last + 1 - fn_line;
        if lines > MAX_LINES && !self.marked(first, fn_line) {
            let name = match &self.owner {
                Some(owner) => format!("{owner}::{}", sig.ident),
                None => sig.ident.to_string(),
            };
            self.long.push(Long { line: fn_line, name, lines });
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if test_only(&module.attrs) {
            if module.content.is_none() {
                self.test_modules.push(module.ident.to_string());
            }
            return;
        }
        syn::visit::visit_item_mod(self, module);
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.measure(&item.attrs, &item.sig, &item.block);
        if !test_only(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if test_only(&item.attrs) {
            return;
        }
        let self_ty = &item.self_ty;
        let outer = self.owner.replace(quote_type(self_ty));
        syn::visit::visit_item_impl(self, item);
        self.owner = outer;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.measure(&item.attrs, &item.sig, &item.block);
        if !test_only(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.measure(&item.attrs, &item.sig, block);
        }
        if !test_only(&item.attrs) {
            syn::visit::visit_trait_item_fn(self, item);
        }
    }
}

/// The last segment of an `impl`'s type, to name its methods `Type::method`.
fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path.path.segments.last().map(|segment| segment.ident.to_string()).unwrap_or_default(),
        _ => "impl".to_string(),
    }
}

/// The long functions of one Rust source, and its test-only module files.
fn long_rust_functions(source: &str) -> (Vec<Long>, Vec<String>) {
    let file = syn::parse_file(source).unwrap_or_else(|e| panic!("does not parse: {e}"));
    let mut walker = Walker::new(source);
    walker.visit_file(&file);
    (walker.long, walker.test_modules)
}

/// Where the file of module `name`, declared in `file`, may be.
fn module_files(file: &Path, name: &str) -> [PathBuf; 2] {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let dir = if matches!(stem, "lib" | "main" | "mod") {
        file.parent().expect("a source file has a directory").to_path_buf()
    } else {
        file.with_extension("")
    };
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")]
}

/// Whether a JavaScript line declares a function whose body opens on it.
fn js_function_name(line: &str) -> Option<String> {
    let code = line.trim();
    if !code.ends_with('{') {
        return None;
    }
    let words = code.trim_start_matches("export ").trim_start_matches("default ").trim_start_matches("async ");
    if let Some(rest) = words.strip_prefix("function") {
        let name: String = rest
            .trim_start_matches('*')
            .trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        return Some(if name.is_empty() { "(anonymous)".to_string() } else { name });
    }
    for keyword in ["const ", "let ", "var "] {
        if let Some(rest) = words.strip_prefix(keyword)
            && (code.ends_with("=> {") || rest.contains("= function") || rest.contains("= async function"))
        {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
            return Some(name);
        }
    }
    None
}

/// The long functions of one JavaScript source, by indentation.
fn long_js_functions(source: &str) -> Vec<Long> {
    let lines: Vec<&str> = source.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut long = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(name) = js_function_name(line) else { continue };
        let depth = indent(line);
        let end = lines[index + 1..]
            .iter()
            .position(|later| indent(later) == depth && later.trim_start().starts_with('}'))
            .map(|offset| index + 1 + offset);
        let Some(end) = end else { continue };
        let length = end + 1 - index;
        let marked = index > 0 && lines[index - 1].trim() == MARKER;
        if length > MAX_LINES && !marked {
            long.push(Long { line: index + 1, name, lines: length });
        }
    }
    long
}

fn report(path: &Path, long: &[Long], out: &mut Vec<String>) {
    let relative = path.strip_prefix(workspace_dir()).unwrap_or(path);
    for function in long {
        out.push(format!("{}:{} {} ({} lines)", relative.display(), function.line, function.name, function.lines));
    }
}

#[test]
fn no_function_is_longer_than_eighty_lines() {
    let crates = workspace_dir().join("crates");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("crates/") {
        let src = entry.expect("crate directory").path().join("src");
        if src.is_dir() {
            files_with(&src, "rs", &mut sources);
        }
    }
    sources.sort();
    let mut test_files = HashSet::new();
    let mut found = Vec::new();
    let mut parsed = Vec::new();
    for path in &sources {
        let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (long, test_modules) = long_rust_functions(&source);
        for name in test_modules {
            test_files.extend(module_files(path, &name));
        }
        parsed.push((path, long));
    }
    for (path, long) in parsed {
        if !test_files.contains(path) {
            report(path, &long, &mut found);
        }
    }
    let mut scripts = Vec::new();
    for entry in std::fs::read_dir(workspace_dir().join("web/verifier")).expect("web/verifier/") {
        let path = entry.expect("verifier file").path();
        if path.is_file() && path.extension().is_some_and(|e| e == "js") {
            scripts.push(path);
        }
    }
    scripts.sort();
    for path in &scripts {
        let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        report(path, &long_js_functions(&source), &mut found);
    }
    assert!(
        found.is_empty(),
        "{} functions are longer than {MAX_LINES} lines; split them into named steps \
         (or, for a data table, put `{MARKER}` on the line above):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// A body of `n` lines between the braces, for the checks' own tests.
fn body(n: usize) -> String {
    (0..n).map(|i| format!("    let _x{i} = {i};\n")).collect()
}

#[test]
fn the_rust_check_counts_from_fn_to_closing_brace() {
    // 79 lines inside: 81 lines from `fn` to `}`.
    let long = format!("/// Doc.\n#[inline]\nfn long() {{\n{}}}\n", body(79));
    let just = format!("fn just() {{\n{}}}\n", body(78));
    let (found, _) = long_rust_functions(&format!("{long}{just}"));
    assert_eq!(found, vec![Long { line: 3, name: "long".into(), lines: 81 }]);
}

#[test]
fn the_rust_check_names_methods_and_skips_tests_and_marked_tables() {
    let source = format!(
        "struct S;\nimpl S {{\n    fn method() {{\n{b}    }}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{b}    }}\n}}\n\
         #[test]\nfn a_test() {{\n{b}}}\n\
         {MARKER}\n/// The table.\nfn table() {{\n{b}}}\n\
         #[cfg(test)]\nmod more;\n\
         trait T {{\n    fn provided() {{\n{b}    }}\n}}\n",
        b = body(90)
    );
    let (found, test_modules) = long_rust_functions(&source);
    let names: Vec<&str> = found.iter().map(|long| long.name.as_str()).collect();
    assert_eq!(names, ["S::method", "provided"]);
    assert_eq!(test_modules, ["more"]);
}

#[test]
fn test_module_files_are_found_beside_and_below() {
    let lib = Path::new("src/lib.rs");
    assert_eq!(module_files(lib, "tests"), [PathBuf::from("src/tests.rs"), PathBuf::from("src/tests/mod.rs")]);
    let store = Path::new("src/store.rs");
    assert_eq!(
        module_files(store, "tests"),
        [PathBuf::from("src/store/tests.rs"), PathBuf::from("src/store/tests/mod.rs")]
    );
}

#[test]
fn the_js_check_follows_indentation() {
    let lines = |n: usize| -> String { (0..n).map(|i| format!("  const x{i} = {i};\n")).collect() };
    let source = format!(
        "export async function verifyExport(text) {{\n{long}}}\n\
         const short = (a) => {{\n{short}}};\n\
         {MARKER}\nfunction table() {{\n{long}}}\n",
        long = lines(85),
        short = lines(10)
    );
    let found = long_js_functions(&source);
    assert_eq!(found, vec![Long { line: 1, name: "verifyExport".into(), lines: 87 }]);
}
