//! `closed_set!`: a closed set of names as an enum, with one definition of each name: the
//! enum, `ALL`, `as_str`, `FromStr` (with an error listing the names), `Display` and serde
//! (as the plain string).

/// Defines `pub enum $name { $variant, ... }` whose wire form is the given string.
macro_rules! closed_set {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every member, in definition order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name on every surface (storage, JSON, messages).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let names: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                    format!("unknown {} '{s}' (expected one of: {})", $what, names.join(", "))
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
