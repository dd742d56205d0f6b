//! The attributes of an exported resource, compactly.
//!
//! A `serde_json::Map` is a `BTreeMap`: for the 15 or so attributes of a resource it allocates two
//! leaves and an inner node, about 2 KB, of which a third holds entries. At 100 000 resources
//! those nodes were 200 MB of the compile's peak (docs/performance.md, "Scale: 100 000 resources per environment").
//! [`Attributes`] keeps the entries in one vector of exactly their number, sorted by name as the
//! map sorted them, so lookups, iteration order and the JSON written are the map's.

use std::ops::Index;

use serde_json::Value as Json;

/// An exported resource's attributes by name, sorted by name; see the module's comment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attributes(Vec<(String, Json)>);

impl Attributes {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(name, _)| name.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        self.position(key).ok().map(|n| &self.0[n].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        self.position(key).ok().map(|n| &mut self.0[n].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key`, returning the value it replaced.
    pub fn insert(&mut self, key: String, value: Json) -> Option<Json> {
        match self.position(&key) {
            Ok(n) => Some(std::mem::replace(&mut self.0[n].1, value)),
            Err(n) => {
                self.0.insert(n, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Json> {
        self.position(key).ok().map(|n| self.0.remove(n).1)
    }

    /// The entries in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Json)> {
        self.into_iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(name, _)| name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<serde_json::Map<String, Json>> for Attributes {
    /// The map's entries, already in name order, in a vector of exactly their number.
    fn from(map: serde_json::Map<String, Json>) -> Self {
        let mut entries = Vec::with_capacity(map.len());
        entries.extend(map);
        Attributes(entries)
    }
}

impl From<Attributes> for serde_json::Map<String, Json> {
    fn from(attributes: Attributes) -> Self {
        attributes.0.into_iter().collect()
    }
}

impl FromIterator<(String, Json)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (String, Json)>>(entries: I) -> Self {
        // Through the map: sorted, and the last of a repeated name wins, as in the map.
        Attributes::from(entries.into_iter().collect::<serde_json::Map<String, Json>>())
    }
}

impl<'a> IntoIterator for &'a Attributes {
    type Item = (&'a String, &'a Json);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (String, Json)>, fn(&'a (String, Json)) -> (&'a String, &'a Json)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(name, value)| (name, value))
    }
}

impl Index<&str> for Attributes {
    type Output = Json;

    /// The attribute `key`; panics when there is none, as the map's index does.
    fn index(&self, key: &str) -> &Json {
        self.get(key).unwrap_or_else(|| panic!("no attribute {key:?}"))
    }
}

impl serde::Serialize for Attributes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every operation answers as `serde_json::Map` does, on the same sequence of writes.
    #[test]
    fn attributes_behave_as_the_map() {
        let mut map = serde_json::Map::new();
        let mut attributes = Attributes::default();
        let writes =
            [("path", json!("/a")), ("hash", json!(1)), ("zz", json!(null)), ("a", json!([])), ("hash", json!(2))];
        for (key, value) in writes {
            assert_eq!(attributes.insert(key.into(), value.clone()), map.insert(key.into(), value));
        }
        assert_eq!(attributes.remove("zz"), map.remove("zz"));
        assert_eq!(attributes.remove("missing"), map.remove("missing"));
        assert_eq!(attributes.keys().collect::<Vec<_>>(), map.keys().collect::<Vec<_>>());
        assert_eq!(attributes.get("hash"), map.get("hash"));
        assert!(attributes.contains_key("a") && !attributes.contains_key("zz"));
        assert_eq!(attributes["path"], map["path"]);
        assert_eq!(serde_json::to_string(&attributes).unwrap(), serde_json::to_string(&map).unwrap());
        assert_eq!(serde_json::Map::from(attributes.clone()), map);
        assert_eq!(Attributes::from(map.clone()), attributes);
        let collected: Attributes =
            vec![("b".to_string(), json!(1)), ("a".to_string(), json!(2)), ("b".to_string(), json!(3))]
                .into_iter()
                .collect();
        assert_eq!(
            collected.iter().map(|(k, v)| (k.as_str(), v.clone())).collect::<Vec<_>>(),
            [("a", json!(2)), ("b", json!(3))]
        );
    }
}
