//! Parsing of a `P_ChatMessage` a player sent into the [`PlayerAction`] the zone runs.
//!
//! Realm Crafter (reference §4.7): a leading `/` or `\` marks a command; the command word is
//! upper-cased up to the first space; its parameters are the trimmed rest, split on commas.
//! Anything else is zone chat. The words whose effect is inside one zone become their own
//! typed actions here (`SETATTRIBUTE`, `SETATTRIBUTEMAX`, `PET`, `INVITE`, `ACCEPT`,
//! `LEAVE`, `WARP`); every other word stays a [`PlayerAction::Command`] for
//! [`super::commands`] (and its `In-game Commands` hook). A command whose parameters do not
//! parse also stays a `Command`, so the zone answers it with its usage line instead of
//! acting on half a value.
//!
//! Words that reach beyond one zone (`YELL`, `PM`, `G`, `GM`, `ALLPLAYERS`, `KICK`,
//! `WARPOTHER`, `IGNORE`) belong to the gateway, which sees every session; it intercepts
//! them before the zone does.

use super::events::{PetCommand, PlayerAction};

/// The action for one chat text as the client sent it (already decoded to a string).
#[doc(alias = "P_ChatMessage")]
pub fn parse_chat(text: &str) -> PlayerAction {
    let Some(cmd) = text.strip_prefix(['/', '\\']) else {
        return PlayerAction::Chat {
            text: text.to_owned(),
        };
    };
    let (word, params) = cmd.split_once(' ').unwrap_or((cmd, ""));
    let word = word.to_ascii_uppercase();
    let params = params.trim();
    typed(&word, params).unwrap_or_else(|| PlayerAction::Command {
        word,
        params: params.to_owned(),
    })
}

/// Comma-separated parameters, each trimmed.
fn split_params(params: &str) -> Vec<&str> {
    if params.is_empty() {
        return Vec::new();
    }
    params.split(',').map(str::trim).collect()
}

fn typed(word: &str, params: &str) -> Option<PlayerAction> {
    let p = split_params(params);
    match (word, p.as_slice()) {
        ("SETATTRIBUTE", [name, value]) => Some(PlayerAction::SetAttribute {
            name: (*name).to_owned(),
            value: value.parse().ok()?,
        }),
        ("SETATTRIBUTEMAX", [name, value]) => Some(PlayerAction::SetAttributeMax {
            name: (*name).to_owned(),
            value: value.parse().ok()?,
        }),
        ("PET", [pet, command, rest @ ..]) => {
            // `cmd` may carry its argument after a space ("name Fang") or as the next
            // comma-separated parameter ("name,Fang").
            let (verb, arg) = match command.split_once(' ') {
                Some((verb, arg)) => (verb, Some(arg.trim())),
                None => (*command, rest.first().copied()),
            };
            let command = match verb.to_ascii_uppercase().as_str() {
                "WAIT" | "STAY" => PetCommand::Wait,
                "FOLLOW" | "COME" => PetCommand::Follow,
                "ATTACK" => PetCommand::Attack,
                "NAME" => PetCommand::Name(arg.filter(|n| !n.is_empty())?.to_owned()),
                _ => return None,
            };
            let pet = (!pet.eq_ignore_ascii_case("ALL")).then(|| (*pet).to_owned());
            Some(PlayerAction::Pet { pet, command })
        }
        ("WARP", [area]) if !area.is_empty() => Some(PlayerAction::Warp {
            area: (*area).to_owned(),
            instance: 0,
        }),
        ("WARP", [area, instance]) if !area.is_empty() => Some(PlayerAction::Warp {
            area: (*area).to_owned(),
            instance: instance.parse().ok()?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(word: &str, params: &str) -> PlayerAction {
        PlayerAction::Command {
            word: word.into(),
            params: params.into(),
        }
    }

    #[test]
    fn plain_text_is_zone_chat() {
        assert_eq!(
            parse_chat("hello there"),
            PlayerAction::Chat {
                text: "hello there".into()
            }
        );
    }

    #[test]
    fn words_are_upper_cased_and_params_trimmed() {
        assert_eq!(parse_chat("/me  waves "), cmd("ME", "waves"));
        assert_eq!(parse_chat("\\yell hi"), cmd("YELL", "hi"));
        assert_eq!(parse_chat("/"), cmd("", ""));
    }

    #[test]
    fn zone_words_become_typed_actions() {
        assert_eq!(
            parse_chat("/setattribute Strength, 12"),
            PlayerAction::SetAttribute {
                name: "Strength".into(),
                value: 12
            }
        );
        assert_eq!(
            parse_chat("/SetAttributeMax Health,150"),
            PlayerAction::SetAttributeMax {
                name: "Health".into(),
                value: 150
            }
        );
        assert_eq!(
            parse_chat("/warp Darkwood"),
            PlayerAction::Warp {
                area: "Darkwood".into(),
                instance: 0
            }
        );
        assert_eq!(
            parse_chat("/warp Darkwood, 3"),
            PlayerAction::Warp {
                area: "Darkwood".into(),
                instance: 3
            }
        );
        assert_eq!(
            parse_chat("/pet ALL,stay"),
            PlayerAction::Pet {
                pet: None,
                command: PetCommand::Wait
            }
        );
        assert_eq!(
            parse_chat("/pet Rex,attack"),
            PlayerAction::Pet {
                pet: Some("Rex".into()),
                command: PetCommand::Attack
            }
        );
        assert_eq!(
            parse_chat("/pet Rex,name Fang"),
            PlayerAction::Pet {
                pet: Some("Rex".into()),
                command: PetCommand::Name("Fang".into())
            }
        );
        assert_eq!(
            parse_chat("/pet Rex,name,Fang"),
            PlayerAction::Pet {
                pet: Some("Rex".into()),
                command: PetCommand::Name("Fang".into())
            }
        );
    }

    #[test]
    fn bad_parameters_stay_commands() {
        assert_eq!(
            parse_chat("/setattribute Strength,lots"),
            cmd("SETATTRIBUTE", "Strength,lots")
        );
        assert_eq!(parse_chat("/warp Darkwood,x"), cmd("WARP", "Darkwood,x"));
        assert_eq!(
            parse_chat("/warp Darkwood,70000"),
            cmd("WARP", "Darkwood,70000")
        );
        assert_eq!(parse_chat("/pet Rex,dance"), cmd("PET", "Rex,dance"));
        assert_eq!(parse_chat("/invite"), cmd("INVITE", ""));
    }
}
