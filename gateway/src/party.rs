//! Parties across the whole cluster (reference §7.9): `/invite`, `/accept`, `/leave`, `/p`
//! and `P_PartyUpdate`, kept by the gateway because members may be in different
//! AreaInstances on different nodes. Pure: names in, effects out.
//!
//! A party has at most [`MAX_MEMBERS`] members, leader first. Every change sends each
//! member a `P_PartyUpdate` with the *other* members' names (a leaver gets an empty one),
//! and tells each member's zone who is in its party ([`PartyEffect::Members`]), which the
//! zone uses to split XP among the members in its own instance, as Realm Crafter does. A
//! party left with one member dissolves. Names compare ASCII case-insensitively.

use std::collections::HashMap;

/// Largest party.
pub const MAX_MEMBERS: usize = 8;

/// What a party change asks of the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartyEffect {
    /// `P_PartyUpdate` to `to`: the other members' names.
    Update {
        /// Recipient (a member's name).
        to: String,
        /// The other members.
        others: Vec<String>,
    },
    /// A green (251) or red (253) chat line to `to`.
    Chat {
        /// Recipient.
        to: String,
        /// Red (an error) rather than green.
        red: bool,
        /// The text.
        text: String,
    },
    /// Tell `who`'s zone the members of its party (empty: none).
    Members {
        /// The player.
        who: String,
        /// All members, leader first (`who` included), or empty.
        members: Vec<String>,
    },
}

/// A party command typed in chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartyCommand {
    /// `/invite name`.
    Invite(String),
    /// `/accept`.
    Accept,
    /// `/leave`.
    Leave,
    /// `/p text`.
    Say(String),
}

impl PartyCommand {
    /// The party command a chat text is, if any (`/` or `\` first, the word in any case).
    pub fn parse(text: &[u8]) -> Option<Self> {
        let text = shared::wire::RcString::from(text).to_latin1();
        let (word, params) = crate::chat::split_command(&text)?;
        match word.as_str() {
            "INVITE" if !params.is_empty() => Some(Self::Invite(params.to_owned())),
            "ACCEPT" => Some(Self::Accept),
            "LEAVE" => Some(Self::Leave),
            "P" => Some(Self::Say(params.to_owned())),
            _ => None,
        }
    }
}

fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Every party of the cluster.
#[derive(Debug, Default)]
pub struct Parties {
    parties: HashMap<u64, Vec<String>>,
    of: HashMap<String, u64>,
    /// Invitee → inviter (the latest invite wins).
    invites: HashMap<String, String>,
    next: u64,
    /// Players kept through a leader change, not yet adopted here: the party each was in
    /// (every member, leader first), as his edge last heard it ([`Parties::expect`]).
    kept: HashMap<String, Vec<String>>,
    /// Players adopted with a party no other member of it is back in yet.
    waiting: HashMap<String, Vec<String>>,
}

impl Parties {
    /// No parties.
    pub fn new() -> Self {
        Self::default()
    }

    /// The members of `name`'s party, leader first.
    pub fn members_of(&self, name: &str) -> Option<&[String]> {
        let id = self.of.get(&key(name))?;
        self.parties.get(id).map(Vec::as_slice)
    }

    fn everyone_told(members: &[String], out: &mut Vec<PartyEffect>) {
        for m in members {
            out.push(PartyEffect::Update {
                to: m.clone(),
                others: members
                    .iter()
                    .filter(|o| !o.eq_ignore_ascii_case(m))
                    .cloned()
                    .collect(),
            });
            out.push(PartyEffect::Members {
                who: m.clone(),
                members: members.to_vec(),
            });
        }
    }

    /// `/invite name`: `target` must be online (its spelling as online), not `inviter`,
    /// not in a party; the inviter's party must not be full.
    pub fn invite(&mut self, inviter: &str, target: Option<&str>, asked: &str) -> Vec<PartyEffect> {
        let err = |text: String| {
            vec![PartyEffect::Chat {
                to: inviter.to_owned(),
                red: true,
                text,
            }]
        };
        let Some(target) = target.filter(|t| !t.eq_ignore_ascii_case(inviter)) else {
            return err(format!("{asked} is not online"));
        };
        if self.of.contains_key(&key(target)) {
            return err(format!("{target} is already in a party"));
        }
        if self
            .members_of(inviter)
            .is_some_and(|m| m.len() >= MAX_MEMBERS)
        {
            return err("Your party is full".into());
        }
        self.invites.insert(key(target), inviter.to_owned());
        vec![
            PartyEffect::Chat {
                to: target.to_owned(),
                red: false,
                text: format!("{inviter} has invited you to join a party (type /accept)"),
            },
            PartyEffect::Chat {
                to: inviter.to_owned(),
                red: false,
                text: format!("You invited {target} to your party"),
            },
        ]
    }

    /// `/accept`: join the party of whoever invited `who` last (creating it if needed),
    /// if that player is still online (`online`).
    pub fn accept(&mut self, who: &str, online: impl Fn(&str) -> bool) -> Vec<PartyEffect> {
        let err = |text: &str| {
            vec![PartyEffect::Chat {
                to: who.to_owned(),
                red: true,
                text: text.to_owned(),
            }]
        };
        let Some(inviter) = self.invites.remove(&key(who)) else {
            return err("Nobody has invited you to a party");
        };
        if self.of.contains_key(&key(who)) {
            return err("You are already in a party");
        }
        if !online(&inviter) {
            return err("Whoever invited you is no longer online");
        }
        let id = match self.of.get(&key(&inviter)) {
            Some(id) => *id,
            None => {
                self.next += 1;
                let id = self.next;
                self.parties.insert(id, vec![inviter.clone()]);
                self.of.insert(key(&inviter), id);
                id
            }
        };
        let Some(members) = self.parties.get_mut(&id) else {
            return Vec::new();
        };
        if members.len() >= MAX_MEMBERS {
            return err("That party is full");
        }
        members.push(who.to_owned());
        self.of.insert(key(who), id);
        let members = members.clone();
        let mut out = Vec::new();
        Self::everyone_told(&members, &mut out);
        out
    }

    /// `/leave`, and a logout: out of the party (dissolved when one member is left) and
    /// out of any pending invite.
    pub fn leave(&mut self, who: &str) -> Vec<PartyEffect> {
        self.invites.remove(&key(who));
        self.kept.remove(&key(who));
        self.waiting.remove(&key(who));
        let Some(id) = self.of.remove(&key(who)) else {
            return Vec::new();
        };
        let mut out = vec![
            PartyEffect::Update {
                to: who.to_owned(),
                others: Vec::new(),
            },
            PartyEffect::Members {
                who: who.to_owned(),
                members: Vec::new(),
            },
        ];
        let Some(members) = self.parties.get_mut(&id) else {
            return out;
        };
        members.retain(|m| !m.eq_ignore_ascii_case(who));
        if members.len() <= 1 {
            for m in std::mem::take(members) {
                self.of.remove(&key(&m));
                out.push(PartyEffect::Update {
                    to: m.clone(),
                    others: Vec::new(),
                });
                out.push(PartyEffect::Members {
                    who: m,
                    members: Vec::new(),
                });
            }
            self.parties.remove(&id);
            return out;
        }
        let members = members.clone();
        Self::everyone_told(&members, &mut out);
        out
    }

    /// A player kept through a leader change was in this party (`members`, leader first,
    /// as his edge last heard it from the previous leader): once he is adopted
    /// ([`Parties::restore`]) he is in it again with whichever of its members are back.
    pub fn expect(&mut self, who: &str, members: Vec<String>) {
        let has_him = members.iter().any(|m| m.eq_ignore_ascii_case(who));
        if has_him && members.len() > 1 && members.len() <= MAX_MEMBERS {
            self.kept.insert(key(who), members);
        } else {
            self.kept.remove(&key(who));
        }
    }

    /// `who`, kept through a leader change, is adopted (in the world here): he joins the
    /// party of a member of his old party who is back already, or forms it again with
    /// one who is waiting; with none back yet he waits. Members who were not kept (they
    /// logged in again: a logout leaves the party, in Realm Crafter too) are not in it.
    pub fn restore(&mut self, who: &str) -> Vec<PartyEffect> {
        let Some(was) = self.kept.remove(&key(who)) else {
            return Vec::new();
        };
        if self.of.contains_key(&key(who)) {
            return Vec::new();
        }
        let rank = |n: &str| was.iter().position(|m| m.eq_ignore_ascii_case(n));
        let others: Vec<&String> = was
            .iter()
            .filter(|m| !m.eq_ignore_ascii_case(who))
            .collect();
        // A member back in a party of members of the old one (not full): join it.
        let joined = others.iter().find_map(|m| {
            let id = *self.of.get(&key(m))?;
            let members = self.parties.get(&id)?;
            (members.len() < MAX_MEMBERS && members.iter().all(|x| rank(x).is_some())).then_some(id)
        });
        let id = match joined {
            Some(id) => id,
            None => {
                // A member back, in no party, whose old party had `who`: the two again.
                let partner = others.iter().find(|m| {
                    !self.of.contains_key(&key(m))
                        && self
                            .waiting
                            .get(&key(m))
                            .is_some_and(|l| l.iter().any(|x| x.eq_ignore_ascii_case(who)))
                });
                let Some(partner) = partner.map(|p| (*p).clone()) else {
                    self.waiting.insert(key(who), was);
                    return Vec::new();
                };
                self.waiting.remove(&key(&partner));
                self.next += 1;
                let id = self.next;
                self.parties.insert(id, vec![partner.clone()]);
                self.of.insert(key(&partner), id);
                id
            }
        };
        let Some(members) = self.parties.get_mut(&id) else {
            return Vec::new();
        };
        members.push(who.to_owned());
        members.sort_by_key(|m| rank(m));
        self.of.insert(key(who), id);
        let members = members.clone();
        let mut out = Vec::new();
        Self::everyone_told(&members, &mut out);
        out
    }

    /// `/p text`: `251 "<PARTY> <Name> text"` to every member, wherever they are.
    pub fn chat(&self, who: &str, text: &str) -> Vec<PartyEffect> {
        let Some(members) = self.members_of(who) else {
            return vec![PartyEffect::Chat {
                to: who.to_owned(),
                red: true,
                text: "You are not in a party".into(),
            }];
        };
        members
            .iter()
            .map(|m| PartyEffect::Chat {
                to: m.clone(),
                red: false,
                text: format!("<PARTY> <{who}> {text}"),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn updates(e: &[PartyEffect]) -> Vec<(String, Vec<String>)> {
        e.iter()
            .filter_map(|x| match x {
                PartyEffect::Update { to, others } => Some((to.clone(), others.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn invite_accept_chat_and_leave() {
        let mut p = Parties::new();
        let on = |_: &str| true;
        assert!(matches!(
            p.invite("Ann", None, "zed").as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
        p.invite("Ann", Some("Bob"), "bob");
        let e = p.accept("bob", on);
        assert_eq!(
            updates(&e),
            vec![
                ("Ann".into(), vec!["bob".to_string()]),
                ("bob".into(), vec!["Ann".to_string()])
            ]
        );
        assert!(e.contains(&PartyEffect::Members {
            who: "Ann".into(),
            members: vec!["Ann".into(), "bob".into()]
        }));
        p.invite("Ann", Some("Cat"), "cat");
        p.accept("Cat", on);
        assert_eq!(p.members_of("CAT").map(<[String]>::len), Some(3));
        assert_eq!(p.chat("Cat", "hi").len(), 3);
        // Bob leaves: he gets an empty update, the others see two.
        let e = p.leave("Bob");
        assert!(updates(&e).contains(&("Bob".into(), vec![])));
        assert!(updates(&e).contains(&("Ann".into(), vec!["Cat".to_string()])));
        // Cat leaves: Ann is alone, the party dissolves.
        let e = p.leave("Cat");
        assert!(updates(&e).contains(&("Ann".into(), vec![])));
        assert!(p.members_of("Ann").is_none());
        assert!(matches!(
            p.chat("Ann", "x").as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
    }

    #[test]
    fn kept_players_are_put_back_in_their_party_as_they_are_adopted() {
        let mut p = Parties::new();
        let was: Vec<String> = ["Ann", "Bob", "Cat", "Dai"].map(String::from).to_vec();
        // Ann (the leader) and Dai logged in again (not kept); Bob, Cat and Dai's old
        // party list come back with the edge.
        for who in ["Bob", "Cat"] {
            p.expect(who, was.clone());
        }
        // Bob is adopted first: nobody of his party is back, he waits.
        assert!(p.restore("Bob").is_empty());
        assert!(p.members_of("Bob").is_none());
        // Ann logged in again meanwhile and is in no party; Cat is adopted: the two kept.
        let e = p.restore("cat");
        assert_eq!(
            p.members_of("Bob"),
            Some(&["Bob".to_string(), "cat".to_string()][..])
        );
        assert!(updates(&e).contains(&("Bob".into(), vec!["cat".to_string()])));
        assert!(e.contains(&PartyEffect::Members {
            who: "cat".into(),
            members: vec!["Bob".into(), "cat".into()]
        }));
        // A third kept member joins them, in the old order (leader first).
        p.expect("Ann", was.clone());
        p.restore("Ann");
        assert_eq!(
            p.members_of("cat").map(<[String]>::to_vec),
            Some(vec!["Ann".into(), "Bob".into(), "cat".into()])
        );
        // Restored once: a second adoption of the same name does nothing.
        assert!(p.restore("Ann").is_empty());
    }

    #[test]
    fn a_kept_party_is_not_restored_over_a_new_one_or_after_a_logout() {
        let mut p = Parties::new();
        let was: Vec<String> = ["Ann", "Bob"].map(String::from).to_vec();
        p.expect("Ann", was.clone());
        p.expect("Bob", was.clone());
        p.restore("Ann");
        // Ann joins someone else's party before Bob is back: Bob waits alone.
        p.invite("Eve", Some("Ann"), "Ann");
        p.accept("Ann", |_| true);
        assert!(p.restore("Bob").is_empty());
        assert_eq!(p.members_of("Ann").map(<[String]>::len), Some(2));
        assert!(p.members_of("Bob").is_none());
        // A waiting player who logs out is forgotten.
        p.leave("Bob");
        p.expect("Cy", vec!["Bob".into(), "Cy".into()]);
        assert!(p.restore("Cy").is_empty());
        assert!(p.members_of("Cy").is_none());
        // A list without the player, or of one, is no party.
        p.expect("Zed", vec!["Yan".into(), "Xia".into()]);
        assert!(p.restore("Zed").is_empty());
    }

    #[test]
    fn refusals() {
        let mut p = Parties::new();
        assert!(matches!(
            p.accept("Bob", |_| true).as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
        p.invite("Ann", Some("Bob"), "Bob");
        assert!(matches!(
            p.accept("Bob", |_| false).as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
        assert!(matches!(
            p.invite("Ann", Some("ann"), "ann").as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
        // A full party.
        for i in 1..MAX_MEMBERS {
            let n = format!("M{i}");
            p.invite("Ann", Some(&n), &n);
            p.accept(&n, |_| true);
        }
        assert_eq!(p.members_of("Ann").map(<[String]>::len), Some(MAX_MEMBERS));
        assert!(matches!(
            p.invite("Ann", Some("Late"), "Late").as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
        // Already in a party.
        let mut q = Parties::new();
        q.invite("A", Some("B"), "B");
        q.accept("B", |_| true);
        assert!(matches!(
            q.invite("C", Some("B"), "B").as_slice(),
            [PartyEffect::Chat { red: true, .. }]
        ));
    }
}
