//! Lenient, borrowing, single-pass decoding of transcript lines. A reader names
//! the JSON shape it expects for each field; a value of any other shape is read
//! past and the field reads as absent, the way `value["field"].as_str()` reads
//! a `serde_json::Value` — but nothing is built for fields nobody reads, strings
//! without escapes are borrowed from the line, and large values (texts, tool
//! inputs and results) stay JSON text, to be appended as they were written.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// What a type makes of each JSON shape; every shape it does not take reads as
/// its default.
pub(crate) trait Shape<'de>: Sized + Default {
    fn string(_: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn boolean(_: bool) -> Self {
        Self::default()
    }
    fn integer(_: i64) -> Self {
        Self::default()
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

/// Decodes one whole JSON text (a transcript line, a record) into `T` by its
/// shape; anything after the value is an error, as for `serde_json::from_slice`.
pub(crate) fn decode<'de, T: Shape<'de>>(json: &'de [u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = any(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Decodes any JSON value into `T` by its shape.
pub(crate) fn any<'de, T: Shape<'de>, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(ByShape::<T>(PhantomData))
}

/// Decodes a value into `T` by its shape where serde wants a seed (a map's
/// value, a sequence's element).
pub(crate) struct Seed<T>(PhantomData<T>);

impl<T> Seed<T> {
    pub(crate) fn new() -> Self {
        Seed(PhantomData)
    }
}

impl<'de, T: Shape<'de>> de::DeserializeSeed<'de> for Seed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        any(d)
    }
}

struct ByShape<T>(PhantomData<T>);

impl<'de, T: Shape<'de>> Visitor<'de> for ByShape<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Ok(T::boolean(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Ok(T::integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok(i64::try_from(v).map(T::integer).unwrap_or_default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        any(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// A struct whose fields are read from a JSON object's keys, each field by its
/// own type (its shape, see the module doc); keys it does not name are read past.
/// Generates the struct (with `Default`), its [`Shape`] and its `Deserialize`:
///
/// `lenient_map! { struct Call<'a> { id: Str<'a> = "id", args: Raw<'a> = "args", } }`
macro_rules! lenient_map {
    (
        $(#[$meta:meta])*
        struct $name:ident<$a:lifetime> {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty = $key:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        struct $name<$a> {
            $( $(#[$fmeta])* $field: $ty, )*
        }

        impl<$a> $crate::transcripts::lenient::Shape<$a> for $name<$a> {
            fn map<A: ::serde::de::MapAccess<$a>>(map: A) -> Result<Self, A::Error> {
                let mut out = Self::default();
                $crate::transcripts::lenient::fields(map, |key, map| {
                    match key {
                        $( $key => out.$field = map.next_value()?, )*
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                Ok(out)
            }
        }

        $crate::transcripts::lenient::by_shape!($name);
    };
}
pub(crate) use lenient_map;

/// `Deserialize` for a [`Shape`] type with one lifetime: decoded by its shape.
macro_rules! by_shape {
    ($name:ident) => {
        impl<'de> ::serde::Deserialize<'de> for $name<'de> {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::transcripts::lenient::any(d)
            }
        }
    };
}
pub(crate) use by_shape;

/// A string field.
#[derive(Debug, Default)]
pub(crate) struct Str<'de>(pub Option<Cow<'de, str>>);

impl<'de> Shape<'de> for Str<'de> {
    fn string(v: Cow<'de, str>) -> Self {
        Str(Some(v))
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

impl Str<'_> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The text, owned.
    pub(crate) fn owned(&self) -> Option<String> {
        self.0.as_deref().map(str::to_string)
    }
}

/// A boolean field: true only when it is JSON `true`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Flag(pub bool);

impl Shape<'_> for Flag {
    fn boolean(v: bool) -> Self {
        Flag(v)
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

/// A field that is a string or a list of `T`: a message's content, its text or
/// its blocks (parts); any other shape is `Other`.
#[derive(Debug, Default)]
pub(crate) enum TextOrList<'de, T> {
    Text(Cow<'de, str>),
    List(Vec<T>),
    #[default]
    Other,
}

impl<'de, T: Shape<'de>> Shape<'de> for TextOrList<'de, T> {
    fn string(v: Cow<'de, str>) -> Self {
        TextOrList::Text(v)
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed::<T>::new())? {
            items.push(item);
        }
        Ok(TextOrList::List(items))
    }
}

impl<'de, T: Shape<'de>> Deserialize<'de> for TextOrList<'de, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

/// A boolean field that may be absent (or of another shape).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Bool(pub Option<bool>);

impl Shape<'_> for Bool {
    fn boolean(v: bool) -> Self {
        Bool(Some(v))
    }
}

impl<'de> Deserialize<'de> for Bool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

/// An array field whose elements are read by their shape; anything else reads
/// as empty.
#[derive(Debug)]
pub(crate) struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: Shape<'de>> Shape<'de> for List<T> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed::<T>::new())? {
            items.push(item);
        }
        Ok(List(items))
    }
}

impl<'de, T: Shape<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

/// Whether a map has a key: `map.present(&mut field)` in a reader's map loop
/// reads the value past and records that the key was there (a `null` included).
pub(crate) fn present<'de, A: MapAccess<'de>>(map: &mut A) -> Result<bool, A::Error> {
    map.next_value::<IgnoredAny>()?;
    Ok(true)
}

/// Reads a map's entries, calling `field` with each key; keys `field` does not
/// take (it returns `Ok(false)`) are read past.
pub(crate) fn fields<'de, A: MapAccess<'de>>(
    mut map: A,
    mut field: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
) -> Result<(), A::Error> {
    while let Some(key) = map.next_key::<Str<'de>>()? {
        if !field(key.as_deref().unwrap_or(""), &mut map)? {
            map.next_value::<IgnoredAny>()?;
        }
    }
    Ok(())
}

/// Any value, kept as its JSON text.
pub(crate) type Raw<'de> = Option<&'de RawValue>;

/// A string field kept as its JSON string token (to be appended as it is).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RawStr<'de>(pub Option<&'de RawValue>);

impl<'de> Deserialize<'de> for RawStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <Option<&'de RawValue>>::deserialize(d)?;
        Ok(RawStr(raw.filter(|r| r.get().starts_with('"'))))
    }
}

impl RawStr<'_> {
    /// The string's text, unescaped.
    pub(crate) fn text(&self) -> Option<Cow<'_, str>> {
        let raw = self.0?.get();
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Probe<'de> {
        name: Str<'de>,
        on: Flag,
        body: Raw<'de>,
        text: RawStr<'de>,
    }

    impl<'de> Shape<'de> for Probe<'de> {
        fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            let mut p = Probe::default();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match key.as_ref() {
                    "name" => p.name = map.next_value()?,
                    "on" => p.on = map.next_value()?,
                    "body" => p.body = map.next_value()?,
                    "text" => p.text = map.next_value()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(p)
        }
    }

    fn probe(json: &str) -> Probe<'_> {
        any(&mut serde_json::Deserializer::from_str(json)).unwrap()
    }

    #[test]
    fn fields_of_another_shape_read_as_absent() {
        let p = probe(r#"{"name": {"x": [1, 2]}, "on": "yes", "body": null, "text": 3}"#);
        assert!(p.name.0.is_none() && !p.on.0 && p.body.is_none() && p.text.0.is_none());
        let p = probe(r#"[1, {"name": "x"}]"#);
        assert!(p.name.0.is_none());
    }

    #[test]
    fn strings_are_borrowed_unless_escaped_and_raw_text_is_kept() {
        let p = probe(
            r#"{"name": "plain", "on": true, "body": {"a": [1, "b"]}, "text": "tab\there", "extra": [{}]}"#,
        );
        assert!(matches!(p.name.0, Some(Cow::Borrowed("plain"))));
        assert!(p.on.0);
        assert_eq!(p.body.unwrap().get(), r#"{"a": [1, "b"]}"#);
        assert_eq!(p.text.0.unwrap().get(), r#""tab\there""#);
        assert_eq!(p.text.text().as_deref(), Some("tab\there"));
        let p = probe(r#"{"name": "a\"b"}"#);
        assert_eq!(p.name.as_deref(), Some("a\"b"));
    }
}
