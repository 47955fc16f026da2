//! The externals' parameters, read from [`External::signature`] (their one definition, the
//! one the LLM prompt shows): what the pre-flight check judges a call by.

use super::External;

/// One parameter of an external, as its signature writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    /// The annotation: `str`, `bool`, `int`, `list[str]`, `list[dict]`, `object` (anything).
    pub ty: &'static str,
    /// The default as written (`False`, `"."`, `None`), when the parameter has one.
    pub default: Option<&'static str>,
}

impl Param {
    pub fn required(&self) -> bool {
        self.default.is_none()
    }

    /// Does a value of Python type `kind` (`str`, `int`, `NoneType`, ...) fit this parameter?
    /// `None` fits where the parameter has a default or takes anything; an annotation the
    /// check does not know takes anything.
    pub fn accepts(&self, kind: &str) -> bool {
        if kind == "NoneType" {
            return self.default.is_some() || self.ty == "object";
        }
        match self.ty {
            "str" | "bool" | "int" | "dict" => kind == self.ty,
            "float" => matches!(kind, "int" | "float"),
            t if t.starts_with("list") => matches!(kind, "list" | "tuple"),
            _ => true,
        }
    }
}

impl External {
    /// The parameters of [`External::signature`], in order.
    pub fn params(self) -> Vec<Param> {
        let sig = self.signature();
        let inner = sig.split_once('(').and_then(|(_, rest)| rest.rsplit_once(") ->")).map_or("", |(params, _)| params);
        split_top(inner)
            .into_iter()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (decl, default) = match p.split_once('=') {
                    Some((decl, value)) => (decl.trim(), Some(value.trim())),
                    None => (p, None),
                };
                let (name, ty) = decl.split_once(':').map_or((decl, "object"), |(n, t)| (n.trim(), t.trim()));
                Param { name, ty, default }
            })
            .collect()
    }

    /// The parameter called `name`, with its position.
    pub fn param(self, name: &str) -> Option<(usize, Param)> {
        self.params().into_iter().enumerate().find(|(_, p)| p.name == name)
    }
}

/// `s` split at the commas outside brackets.
fn split_top(s: &'static str) -> Vec<&'static str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_reads_as_parameters() {
        for e in External::ALL {
            let params = e.params();
            assert!(!params.is_empty(), "{e}: no parameters read from {}", e.signature());
            for p in &params {
                assert!(p.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{e}: parameter {p:?}");
                assert!(!p.ty.is_empty() && !p.ty.contains(' '), "{e}: annotation {p:?}");
            }
            // Required parameters come first, as Python has them.
            let first_optional = params.iter().position(|p| !p.required()).unwrap_or(params.len());
            assert!(params[first_optional..].iter().all(|p| !p.required()), "{e}: {params:?}");
        }
        let search = External::SearchContent.params();
        assert_eq!(search.iter().map(|p| p.name).collect::<Vec<_>>(), ["pattern", "path", "glob", "ignore_case", "context", "max_results"]);
        assert_eq!(search[2], Param { name: "glob", ty: "str", default: Some("None") });
        assert_eq!(External::ReadFile.param("tagged"), Some((1, Param { name: "tagged", ty: "bool", default: Some("False") })));
    }

    #[test]
    fn literal_kinds_fit_as_the_host_takes_them() {
        let p = |ty, default| Param { name: "x", ty, default };
        assert!(p("str", None).accepts("str") && !p("str", None).accepts("int") && !p("str", None).accepts("NoneType"));
        assert!(p("str", Some("None")).accepts("NoneType"));
        assert!(p("list[str]", None).accepts("tuple") && !p("list[str]", None).accepts("str"));
        assert!(!p("int", Some("1")).accepts("bool") && !p("bool", Some("False")).accepts("int"));
        assert!(p("object", None).accepts("int") && p("object", None).accepts("NoneType"));
    }
}
