//! Client SDK: speaks the Realm Crafter protocol to the gateway (see issue 7).
