//! Black-box tests of the `rcwire` binary: decode, encode back, frames, and malformed input
//! (exit code 2 and exactly one line naming the problem and the byte offset).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

fn rcwire(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rcwire"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rcwire runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "rcwire failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn assert_fails_with_one_line(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "exit code 2 on malformed input");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(needle), "{err:?} should mention {needle:?}");
    assert!(out.stdout.is_empty());
}

/// Decodes `hex`, checks it is the named packet, encodes the JSON back and expects `hex`.
fn round_trip(dir: &str, hex: &str, name: &str) -> serde_json::Value {
    let decoded = rcwire(&["decode", "--dir", dir, hex], None);
    let v = json(&decoded);
    assert_eq!(v["name"], name);
    let encoded = rcwire(&["encode"], Some(&v.to_string()));
    assert!(encoded.status.success());
    assert_eq!(String::from_utf8_lossy(&encoded.stdout).trim(), hex);
    v
}

#[test]
fn standard_update_c2s_golden() {
    let v = round_trip(
        "c2s",
        "0e0000204100 00b0c000000040000010410000a0c00100"
            .replace(' ', "")
            .as_str(),
        "P_StandardUpdate",
    );
    assert_eq!(v["id"], 14);
    assert_eq!(v["dest_x"], 10.0);
    assert_eq!(v["dest_z"], -5.5);
    assert_eq!(v["y"], 2.0);
    assert_eq!(v["x"], 9.0);
    assert_eq!(v["z"], -5.0);
    assert_eq!(v["is_running"], 1);
    assert_eq!(v["walking_backward"], 0);
}

#[test]
fn change_area_golden() {
    let v = round_trip(
        "s2c",
        "09cdcc52c233335340cdccb0420000b0c1012c0134120000000650 6c61696e73"
            .replace(' ', "")
            .as_str(),
        "P_ChangeArea",
    );
    assert_eq!(v["area"], "Plains");
    assert_eq!(v["gravity"], 300);
    assert_eq!(v["instance_handle"], 0x1234);
}

#[test]
fn attack_and_stat_golden() {
    round_trip("c2s", "120700", "P_AttackActor");
    round_trip("s2c", "124807000d0001", "P_AttackActor");
    round_trip("s2c", "124f03000700", "P_AttackActor");
    round_trip("s2c", "16410700005500", "P_StatUpdate");
    round_trip("s2c", "1307000300", "P_ActorDead");
    round_trip("s2c", "0d0700", "P_ActorGone");
}

#[test]
fn unknown_id_is_raw_and_round_trips() {
    let v = round_trip("c2s", "63010203", "Raw");
    assert_eq!(v["id"], 99);
}

#[test]
fn malformed_hex_exits_2_with_the_offset() {
    assert_fails_with_one_line(
        &rcwire(&["decode", "--dir", "c2s", "0e0g"], None),
        "offset 1",
    );
    assert_fails_with_one_line(
        &rcwire(&["decode", "--dir", "c2s", "0e0"], None),
        "offset 1",
    );
}

#[test]
fn truncated_packet_exits_2_with_the_offset() {
    let out = rcwire(&["decode", "--dir", "c2s", "0e000020"], None);
    assert_fails_with_one_line(&out, "byte");
}

#[test]
fn bad_json_exits_2() {
    assert_fails_with_one_line(&rcwire(&["encode", "--dir", "s2c"], Some("{")), "JSON");
    assert_fails_with_one_line(
        &rcwire(&["encode"], Some(r#"{"name":"P_AttackActor"}"#)),
        "--dir",
    );
    assert_fails_with_one_line(
        &rcwire(&["encode", "--dir", "s2c"], Some(r#"{"name":"P_Nope"}"#)),
        "server packet",
    );
}

#[test]
fn frames_splits_a_stream_and_a_datagram() {
    let out = rcwire(
        &["frames", "--dir", "s2c", "05001307000300", "03000d0700"],
        None,
    );
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["name"], "P_ActorDead");
    assert_eq!(lines[1]["name"], "P_ActorGone");
    assert_eq!(lines[1]["frame_offset"], 7);

    let update = "17000e0000204100 00b0c000000040000010410000a0c00100".replace(' ', "");
    let two = format!("{update}{update}");
    let out = rcwire(&["frames", "--dir", "c2s", "--datagram", &two], None);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);

    // One byte short: the whole datagram is rejected.
    let cut = &two[..two.len() - 2];
    assert_fails_with_one_line(
        &rcwire(&["frames", "--dir", "c2s", "--datagram", cut], None),
        "offset",
    );
    // A stream that ends inside a frame.
    assert_fails_with_one_line(
        &rcwire(&["frames", "--dir", "s2c", "05001307"], None),
        "stream",
    );
}

#[test]
fn items_gold_and_trade_golden() {
    // rc-content-reference §9.15, §9.24, §9.35, §9.41, §9.44, §9.61.
    let v = round_trip("s2c", "0f473412000003000100", "P_InventoryUpdate");
    assert_eq!(
        (v["sub"].clone(), v["item_handle"].clone()),
        ("G".into(), 0x1234.into())
    );
    let v = round_trip("c2s", "0f4759341200000e", "P_InventoryUpdate");
    assert_eq!(
        (v["sub"].clone(), v["slot"].clone()),
        ("GY".into(), 14.into())
    );
    round_trip("c2s", "0f440e0100", "P_InventoryUpdate");
    round_trip(
        "s2c",
        "0f4f070001000200ffff0400010000000100",
        "P_InventoryUpdate",
    );
    let v = round_trip("s2c", "1855fa000000", "P_GoldChange");
    assert_eq!(
        (v["sub"].clone(), v["amount"].clone()),
        ("U".into(), 250.into())
    );
    round_trip("c2s", "2c0e0100", "P_EatItem");
    round_trip("c2s", "29000300", "P_UpdateTrading");
    round_trip("c2s", "3d0700", "P_Examine");
    round_trip("c2s", "3e0700", "P_Trade");
    round_trip("c2s", "2b0e0700", "P_ItemScript");
    round_trip("c2s", "1f4e05", "P_ActionBarUpdate");
    round_trip("c2s", "23", "P_OpenTrading");
    let v = round_trip("s2c", "23313150", "P_OpenTrading");
    assert_eq!(
        (v["part"].clone(), v["parts"].clone(), v["chunk"].clone()),
        (1.into(), 1.into(), "50".into())
    );
    round_trip("s2c", "28", "P_CloseTrading");
    round_trip("s2c", "2d0e3200", "P_ItemHealth");
}

/// The seed's N_POS example, decimal `4 1 17 16 11 39 102 35 207 27 134 112 90 132 151 126 35`.
const NPOS_SEED: &str = "04 01 11 10 0b27 6623 cf1b 8670 5a 84 977e 23";

#[test]
fn npos_decode_seed_example() {
    let v = json(&rcwire(&["npos", "decode", NPOS_SEED], None));
    assert_eq!(v["cn"], 1);
    assert_eq!(v["physstate"], 1);
    assert_eq!(v["lifesequence"], 0);
    assert_eq!(v["move"], 1);
    assert_eq!(v["strafe"], 0);
    assert_eq!(v["gameclip"], false);
    assert_eq!(v["feet"], serde_json::json!([624.6875, 566.375, 444.9375]));
    assert_eq!(v["yaw"], 6.0);
    assert_eq!(v["pitch"], -10.0);
    assert_eq!(v["roll"], 0.0);
    assert_eq!(v["falling"], serde_json::json!([0.0, 0.0, -35.0]));
    assert_eq!(v["vel"].as_array().map(Vec::len), Some(3));
}

#[test]
fn npos_encode_seed_example_and_defaults() {
    let player = r#"{"cn": 1, "physstate": 1, "move": 1, "o": [624.6875, 566.375, 458.9375],
        "yaw": 6.5, "pitch": -9.5, "vel": [-17.29, 131.37, 0], "falling": [0, 0, -35]}"#;
    let out = rcwire(&["npos", "encode"], Some(player));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        NPOS_SEED.replace(' ', "")
    );
    // Missing fields are 0/false, eyeheight 14: the feet are at z = -14 (3 bytes).
    let out = rcwire(&["npos", "encode"], Some("{}"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "040000040000000020ffff90 7e5a00907e".replace(' ', "")
    );
}

#[test]
fn npos_encode_then_decode_gameclip() {
    let out = rcwire(
        &["npos", "encode"],
        Some(r#"{"cn": 300, "gameclip": true, "eyeheight": 0}"#),
    );
    let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // cn 300 and flags 0x80 are both two-byte putuints.
    assert!(hex.starts_with("04ac02008001"), "{hex}");
    let v = json(&rcwire(&["npos", "decode", &hex], None));
    assert_eq!(v["cn"], 300);
    assert_eq!(v["gameclip"], true);
}

#[test]
fn npos_malformed_input_is_one_line() {
    assert_fails_with_one_line(&rcwire(&["npos", "decode", "0401"], None), "byte offset 2");
    assert_fails_with_one_line(&rcwire(&["npos", "decode", "05"], None), "not an N_POS");
    assert_fails_with_one_line(
        &rcwire(&["npos", "decode", NPOS_SEED, "00"], None),
        "byte offset 17",
    );
    assert_fails_with_one_line(
        &rcwire(&["npos", "encode"], Some(r#"{"cnn": 1}"#)),
        "not a Sauerbraten player",
    );
    assert_fails_with_one_line(&rcwire(&["npos", "encode"], Some("{")), "not JSON");
}
