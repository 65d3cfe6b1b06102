#!/usr/bin/env python3
"""Independent Realm Crafter-over-QUIC interoperability client (Python + aioquic).

Written only from the published contract (shared/spec/transport.md,
realm-crafter-reference.md, golden-vectors.md, docs/protocol.md), not from the
server's Rust code, so that it exercises the contract with a second QUIC stack.

It runs one scripted session against a running gateway:
  1. connect (ALPN rc/1, no certificate verification), open the bidi stream
  2. P_CreateAccount + P_VerifyAccount
  3. P_FetchActors, P_CreateCharacter, P_VerifyAccount, P_FetchCharacter
  4. P_StartGame and the start sequence
  5. P_StandardUpdate datagrams up, own-actor updates back
  6. walk through a portal to another area and back again
  7. close (code 0), reconnect, log in, start again, position kept

Run `rc_client.py --help` for options. Exit code 0 = PASS, 1 = FAIL.
"""

import argparse
import asyncio
import hashlib
import math
import os
import random
import ssl
import string
import struct
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    ConnectionTerminated,
    DatagramFrameReceived,
    HandshakeCompleted,
    StreamDataReceived,
)

ALPN = "rc/1"

# Packet ids (reference §3)
P_CreateAccount = 1
P_VerifyAccount = 2
P_FetchCharacter = 3
P_CreateCharacter = 4
P_FetchActors = 7
P_ChangeArea = 9
P_NewActor = 11
P_StartGame = 12
P_ActorGone = 13
P_StandardUpdate = 14
P_ChatMessage = 16
P_AttackActor = 18
P_StatUpdate = 22
P_KickedPlayer = 60

NAMES = {
    0: "NewClient", 1: "P_CreateAccount", 2: "P_VerifyAccount", 3: "P_FetchCharacter",
    4: "P_CreateCharacter", 5: "P_DeleteCharacter", 6: "P_ChangePassword", 7: "P_FetchActors",
    9: "P_ChangeArea", 10: "P_FetchUpdateFiles", 11: "P_NewActor", 12: "P_StartGame",
    13: "P_ActorGone", 14: "P_StandardUpdate", 15: "P_InventoryUpdate", 16: "P_ChatMessage",
    17: "P_WeatherChange", 18: "P_AttackActor", 19: "P_ActorDead", 21: "P_Dialog",
    22: "P_StatUpdate", 23: "P_QuestLog", 24: "P_GoldChange", 25: "P_NameChange",
    26: "P_KnownSpellUpdate", 30: "P_AnimateActor", 32: "P_XPUpdate", 36: "P_ActorEffect",
    37: "P_Projectile", 45: "P_ItemHealth", 46: "P_Jump", 48: "P_FloatingNumber",
    49: "P_RepositionActor", 60: "P_KickedPlayer",
}

PORTAL_LOCK_S = 35.0  # reference §7.7: same portal re-entry locked for 35000 ms


def pname(t):
    return "%s(%d)" % (NAMES.get(t, "P_?"), t)


def hexs(b, limit=48):
    b = bytes(b)
    h = b[:limit].hex(" ")
    return h + (" ...(%d bytes)" % len(b) if len(b) > limit else "")


# --------------------------------------------------------------------------------------
# Encoding primitives (reference §2)
# --------------------------------------------------------------------------------------
class ParseError(Exception):
    pass


class Reader:
    def __init__(self, b, off=0):
        self.b = bytes(b)
        self.o = off

    def left(self):
        return len(self.b) - self.o

    def take(self, n):
        if n < 0 or self.o + n > len(self.b):
            raise ParseError("need %d bytes at offset %d, have %d" % (n, self.o, self.left()))
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def i32(self):
        return struct.unpack("<i", self.take(4))[0]

    def f32(self):
        return struct.unpack("<f", self.take(4))[0]

    def str8(self):
        return self.take(self.u8()).decode("latin-1")

    def str16(self):
        return self.take(self.u16()).decode("latin-1")

    def fstr(self):  # file string: i32 len + bytes
        n = self.i32()
        return self.take(n).decode("latin-1")

    def rest(self):
        return self.take(self.left())


def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def str8(s):
    b = s.encode("latin-1") if isinstance(s, str) else s
    return u8(len(b)) + b


def md5_hex(s):
    return hashlib.md5(s.encode("latin-1")).hexdigest()


def creds(user, password):
    return str8(user) + str8(md5_hex(password))


def obfuscate_email(s):
    return bytes(((c - 26) & 0xFF) for c in s.encode("latin-1"))[::-1]


def frame(t, payload=b""):
    n = 1 + len(payload)
    if n > 0xFFFF:
        raise ValueError("frame too long")
    return struct.pack("<HB", n, t) + payload


def standard_update_up(dest_x, dest_z, y, x, z, run=0, back=0):
    return struct.pack("<fffffBB", dest_x, dest_z, y, x, z, run, back)


def parse_standard_update_down(p):
    if len(p) not in (22, 24, 26):
        raise ParseError("S->C P_StandardUpdate payload is %d bytes, expected 22, 24 or 26" % len(p))
    rid, x, z, run, back, dx, dz, mount = struct.unpack_from("<HffBBffH", p, 0)
    d = dict(rid=rid, x=x, z=z, run=run, back=back, dest_x=dx, dest_z=dz, mount=mount,
             energy=None, fly_y=None, length=len(p))
    if len(p) == 24:
        d["energy"] = struct.unpack_from("<H", p, 22)[0]
    elif len(p) == 26:
        d["fly_y"] = struct.unpack_from("<f", p, 22)[0]
    return d


def self_test():
    """Golden vectors (golden-vectors.md) through this client's codec."""
    up = bytes([14]) + standard_update_up(10, -5.5, 2, 9, -5, 1, 0)
    assert up.hex(" ") == "0e 00 00 20 41 00 00 b0 c0 00 00 00 40 00 00 10 41 00 00 a0 c0 01 00", up.hex(" ")
    down = bytes.fromhex("0e 07 00 00 00 10 41 00 00 a0 c0 01 00 00 00 20 41 00 00 b0 c0 00 00 64 00")
    d = parse_standard_update_down(down[1:])
    assert (d["rid"], d["x"], d["z"], d["run"], d["back"], d["dest_x"], d["dest_z"], d["mount"], d["energy"]) == \
        (7, 9.0, -5.0, 1, 0, 10.0, -5.5, 0, 100), d
    v = bytes([2]) + creds("bob", "secret")
    assert v == bytes.fromhex("02 03 62 6f 62 20") + b"5ebe2294ecd0e0f08eab7690d2a6ee69"
    ca = bytes.fromhex("09 cd cc 52 c2 33 33 53 40 cd cc b0 42 00 00 b0 c1 01 2c 01 34 12 00 00 00 06 50 6c 61 69 6e 73")
    c = parse_change_area(ca[1:])
    assert c["area"] == "Plains" and c["handle"] == 0x1234 and c["gravity"] == 300 and c["pvp"] == 1
    assert abs(c["x"] + 52.7) < 1e-4 and abs(c["yaw"] + 22) < 1e-4
    assert md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72"
    # email obfuscation round-trips
    ob = obfuscate_email("rust@bot.com")
    assert bytes(((c + 26) & 0xFF) for c in ob[::-1]) == b"rust@bot.com"
    assert frame(14, b"\xde\xad") == b"\x03\x00\x0e\xde\xad"


# --------------------------------------------------------------------------------------
# Packet decoders
# --------------------------------------------------------------------------------------
def parse_change_area(p):
    r = Reader(p)
    d = dict(x=r.f32(), y=r.f32(), z=r.f32(), yaw=r.f32(), pvp=r.u8(), gravity=r.u16(),
             handle=r.u32(), weather=r.u8(), area=r.str8())
    if r.left():
        raise ParseError("%d trailing bytes after area name" % r.left())
    return d


def parse_char_list(r):
    chars = []
    while r.left():
        chars.append(dict(name=r.str8(), actor=r.u16(), gender=r.u8(), face=r.u8(),
                          hair=r.u8(), beard=r.u8(), body=r.u8()))
    return chars


def parse_new_actor(p, templates):
    r = Reader(p)
    d = dict(handle=r.u32(), rid=r.u16(), level=r.u16(), xp=r.u32(), template=r.u16(),
             x=r.f32(), y=r.f32(), z=r.f32(), yaw=r.f32(), human=r.u8(), name=r.str8(), tag=r.str8())
    t = templates.get(d["template"])
    if t is None:
        d["partial"] = "unknown template %d; rest not decoded" % d["template"]
        return d
    if t["genders"] == 0:
        d["gender"] = r.u8()
    d["reputation"], d["face"], d["hair"], d["body"], d["beard"] = [r.u16() for _ in range(5)]
    d["speed"] = (r.u16(), r.u16())
    d["health"] = (r.u16(), r.u16())
    d["equipment"] = [r.u16() for _ in range(4)]
    d["home_faction"] = r.u8()
    d["ratings"] = list(r.take(100))
    if r.left():
        raise ParseError("P_NewActor for RID %d has %d trailing bytes" % (d["rid"], r.left()))
    return d


def parse_actor_tpl(r):
    a = dict(id=r.u16(), playable=r.u8(), poly=r.u8())
    arr = [r.u16() for _ in range(8 + 5 * 7 + 16 + 16)]
    a["meshes"] = arr[:8]
    a["rideable"], a["trade"], a["blood"] = r.u8(), r.u8(), r.u16()
    a["aggr"], a["genders"], a["env"] = r.u8(), r.u8(), r.u8()
    a["inv_slots"], a["m_anim"], a["f_anim"] = r.u16(), r.u16(), r.u16()
    a["scale"], a["faction"] = r.f32(), r.u8()
    a["attrs"] = [(r.u16(), r.u16()) for _ in range(40)]
    a["race"], a["class"], a["desc"] = r.str8(), r.str8(), r.str16()
    return a


def parse_item(r, v1):
    it = dict(id=r.u16(), type=r.u8(), takes_dmg=r.u8(), value=r.u32(), mass=r.u16(), thumb=r.u16())
    r.take(6)
    r.u16(); r.u16(); r.u16(); r.u8()
    r.take(80)
    it["name"], _, _ = r.str8(), r.str8(), r.str8()
    t = it["type"]
    if t == 1:
        r.u16(); r.u16(); r.u16(); r.f32()
    elif t == 2 or t == 4 or t == 5 or t == 6:
        r.u16()
    if v1 or t == 7:
        it["misc"] = r.str8()
    return it


def parse_all(r, fn):
    out = []
    while r.left():
        out.append(fn(r))
    return out


def try_variants(body, variants):
    """variants: list of (label, fn(Reader) -> value). Returns (label, value) of the first
    that consumes body exactly, else (None, errors)."""
    errs = []
    for label, fn in variants:
        try:
            r = Reader(body)
            v = fn(r)
            if r.left():
                raise ParseError("%d bytes left over" % r.left())
            return label, v
        except (ParseError, UnicodeDecodeError) as e:
            errs.append("%s: %s" % (label, e))
    return None, errs


# --------------------------------------------------------------------------------------
# World data (to find portals); native TOML directory or Realm Crafter Server Data
# --------------------------------------------------------------------------------------
def load_world(path):
    if not path or not os.path.isdir(path):
        return None
    w = dict(areas={}, actors={}, start_gold=None, start_rep=None, energy_stat=None, kind=None)
    if os.path.exists(os.path.join(path, "world.toml")):
        if tomllib is None:
            return None
        w["kind"] = "native"
        with open(os.path.join(path, "world.toml"), "rb") as f:
            wt = tomllib.load(f)
        misc = wt.get("misc", {})
        w["start_gold"] = misc.get("start_gold", 50)
        w["start_rep"] = misc.get("start_reputation", 50)
        fa = wt.get("fixed_attributes", {})
        w["energy_stat"] = fa.get("energy", -1)
        w["health_stat"] = fa.get("health", -1)
        w["speed_stat"] = fa.get("speed", -1)
        actors = list(wt.get("actor", []))
        ap = os.path.join(path, "actors.toml")
        if os.path.exists(ap):
            with open(ap, "rb") as f:
                actors += tomllib.load(f).get("actor", [])
        for a in actors:
            w["actors"][a["id"]] = dict(start_area=a.get("start_area", ""), start_portal=a.get("start_portal", ""))
        areas = list(wt.get("area", []))
        ad = os.path.join(path, "areas")
        if os.path.isdir(ad):
            for fn in sorted(os.listdir(ad)):
                if fn.endswith(".toml"):
                    with open(os.path.join(ad, fn), "rb") as f:
                        a = tomllib.load(f)
                    a.setdefault("name", fn[:-5])
                    areas.append(a)
        for a in areas:
            portals = []
            for p in a.get("portal", []):
                portals.append(dict(index=p.get("index", 0), name=p.get("name", ""),
                                    link_area=p.get("link_area", ""), link_name=p.get("link_name", ""),
                                    x=p.get("x", 0.0), y=p.get("y", 0.0), z=p.get("z", 0.0),
                                    size=p.get("size", 0.0), yaw=p.get("yaw", 0.0)))
            wps = [(p.get("x", 0.0), p.get("y", 0.0), p.get("z", 0.0)) for p in a.get("waypoint", [])]
            w["areas"][a["name"]] = dict(name=a["name"], pvp=int(bool(a.get("pvp", False))),
                                         gravity=a.get("gravity", 300), portals=portals, waypoints=wps)
        return w
    ad = os.path.join(path, "Areas")
    if os.path.isdir(ad):
        w["kind"] = "realmcrafter"
        try:
            with open(os.path.join(path, "Misc.dat"), "rb") as f:
                r = Reader(f.read())
            w["start_gold"], w["start_rep"] = r.i32(), r.i32()
        except (OSError, ParseError):
            pass
        try:
            with open(os.path.join(path, "Fixed Attributes.dat"), "rb") as f:
                r = Reader(f.read())
            fx = [r.u16() for _ in range(6)]
            fx = [-1 if v == 65535 else v for v in fx]
            w["health_stat"], w["energy_stat"], w["speed_stat"] = fx[0], fx[1], fx[5]
        except (OSError, ParseError):
            pass
        try:
            with open(os.path.join(path, "Actors.dat"), "rb") as f:
                r = Reader(f.read())
            while r.left():
                aid = r.u16()
                _race, _cls, _desc, sa, sp = [r.fstr() for _ in range(5)]
                r.take(2 + 2 + 4 + 4 + 2 * (8 + 35 + 32) + 2 + 160 + 40)
                r.take(4 + 4 + 1 + 1 + 4 + 1 + 1 + 4 + 1)
                w["actors"][aid] = dict(start_area=sa, start_portal=sp)
        except (OSError, ParseError):
            pass
        for fn in sorted(os.listdir(ad)):
            if not fn.lower().endswith(".dat"):
                continue
            with open(os.path.join(ad, fn), "rb") as f:
                r = Reader(f.read())
            try:
                r.take(5); r.fstr(); r.fstr(); pvp = r.u8(); grav = r.u16(); r.u8(); r.fstr()
                for _ in range(150):
                    r.take(16); r.fstr(); r.fstr()
                wps = []
                for _ in range(2000):
                    x, y, z = r.f32(), r.f32(), r.f32()
                    r.take(10)
                    wps.append((x, y, z))
                portals = []
                for i in range(100):
                    n, la, ln = r.fstr(), r.fstr(), r.fstr()
                    x, y, z, sz, yaw = [r.f32() for _ in range(5)]
                    if n or la:
                        portals.append(dict(index=i, name=n, link_area=la, link_name=ln, x=x, y=y, z=z,
                                            size=sz, yaw=yaw))
                used = set()
                for _ in range(1000):
                    r.u16()
                    wp = r.u16()
                    r.f32(); r.fstr(); r.fstr(); r.fstr()
                    mx = r.u16(); r.u16(); r.f32()
                    if mx and wp < 2000:
                        used.add(wp)
            except ParseError:
                continue
            name = fn[:-4]
            w["areas"][name] = dict(name=name, pvp=pvp, gravity=grav, portals=portals,
                                    waypoints=[wps[i] for i in sorted(used)])
        return w
    return None


def find_area(world, name):
    for k, v in world["areas"].items():
        if k.lower() == name.lower():
            return v
    return None


def portal_by_name(area, name):
    for p in area["portals"]:
        if p["name"].lower() == name.lower() and name:
            return p
    return None


def portal_destination(world, portal):
    """reference §7.7: the linked area's portal named LinkName (case-insensitive), else portal 0."""
    dest = find_area(world, portal["link_area"]) if portal["link_area"] else None
    if dest is None:
        return None, None
    p = portal_by_name(dest, portal["link_name"]) if portal["link_name"] else None
    if p is None:
        p = next((q for q in dest["portals"] if q["index"] == 0), None)
    return dest, p


def dist3(a, b):
    return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)


def dist2(a, b):
    return math.hypot(a[0] - b[0], a[2] - b[2])


def pos_of(p):
    return (p["x"], p["y"], p["z"])


def safe_spot(area, origin, exclude_radius, dist):
    """A point `dist` away from `origin` that stays clear of portals and NPC waypoints."""
    best, best_score = None, -1e18
    for k in range(16):
        a = 2 * math.pi * k / 16
        cand = (origin[0] + dist * math.cos(a), origin[1], origin[2] + dist * math.sin(a))
        score = 1e9
        for p in (area["portals"] if area else []):
            d = dist2(cand, pos_of(p))
            if p["link_area"] and d < p["size"] + 3:
                score = -1e9
            elif d > 0.5:
                score = min(score, d + 30)  # portals matter less than monsters
        for wp in (area["waypoints"] if area else []):
            score = min(score, dist2(cand, wp))
        if score > best_score:
            best, best_score = cand, score
    return best


# --------------------------------------------------------------------------------------
# QUIC plumbing
# --------------------------------------------------------------------------------------
class RcProtocol(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.stream_id = None
        self.buf = bytearray()
        self.inbox = []  # (type, payload, t)
        self.inbox_event = asyncio.Event()
        self.terminated = None
        self.alpn = None
        self.stream_end = False
        self.frame_errors = []
        self.dgram_errors = []
        self.dgram_count = 0
        self.updates = {}  # rid -> list of (t, dict)
        self.update_lengths = {}
        self.other_streams = set()

    def quic_event_received(self, ev):
        now = time.monotonic()
        if isinstance(ev, HandshakeCompleted):
            self.alpn = ev.alpn_protocol
        elif isinstance(ev, StreamDataReceived):
            if ev.stream_id != self.stream_id:
                self.other_streams.add(ev.stream_id)
                return
            self.buf += ev.data
            while len(self.buf) >= 2:
                n = struct.unpack_from("<H", self.buf)[0]
                if n == 0:
                    self.frame_errors.append("server sent a frame with len 0")
                    del self.buf[:2]
                    continue
                if len(self.buf) < 2 + n:
                    break
                fr = bytes(self.buf[2:2 + n])
                del self.buf[:2 + n]
                self.inbox.append((fr[0], fr[1:], now))
            if ev.end_stream:
                self.stream_end = True
                if self.buf:
                    self.frame_errors.append("stream ended with %d bytes of a truncated frame" % len(self.buf))
            self.inbox_event.set()
        elif isinstance(ev, DatagramFrameReceived):
            self.dgram_count += 1
            d = ev.data
            o = 0
            frames = []
            while o < len(d):
                if o + 2 > len(d):
                    self.dgram_errors.append("datagram: dangling byte(s) %s" % hexs(d))
                    frames = None
                    break
                n = struct.unpack_from("<H", d, o)[0]
                if n == 0 or o + 2 + n > len(d):
                    self.dgram_errors.append("datagram: bad frame len %d at %d: %s" % (n, o, hexs(d)))
                    frames = None
                    break
                frames.append(d[o + 2:o + 2 + n])
                o += 2 + n
            for fr in frames or []:
                if fr[0] != P_StandardUpdate:
                    self.dgram_errors.append("datagram carried %s (only type 14 allowed): %s" % (pname(fr[0]), hexs(fr)))
                    continue
                try:
                    u = parse_standard_update_down(fr[1:])
                except ParseError as e:
                    self.dgram_errors.append("%s: %s" % (e, hexs(fr)))
                    continue
                self.updates.setdefault(u["rid"], []).append((now, u))
                self.update_lengths[len(fr) - 1] = self.update_lengths.get(len(fr) - 1, 0) + 1
        elif isinstance(ev, ConnectionTerminated):
            self.terminated = ev
            self.inbox_event.set()


class StepFail(Exception):
    pass


class Session:
    def __init__(self, args, out):
        self.args = args
        self.out = out
        self.cm = None
        self.proto = None
        self.rid = None
        self.area = None  # last P_ChangeArea dict
        self.pos = None   # (x, y, z) last position we told the server (or it told us)
        self.log = []     # unrelated packets seen while waiting
        self.new_actors = []

    # -- connection --
    async def open(self):
        cfg = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], verify_mode=ssl.CERT_NONE,
                                max_datagram_frame_size=65536, idle_timeout=60.0, server_name="localhost")
        self.cm = connect(self.args.host, self.args.port, configuration=cfg, create_protocol=RcProtocol,
                          wait_connected=True)
        self.proto = await asyncio.wait_for(self.cm.__aenter__(), self.args.timeout)
        q = self.proto._quic
        self.proto.stream_id = q.get_next_available_stream_id(is_unidirectional=False)
        return self.proto.alpn

    async def close(self, code=0):
        if self.proto is None:
            return
        self.proto.close(error_code=code, reason_phrase="")
        try:
            await asyncio.wait_for(self.proto.wait_closed(), self.args.timeout)
            await asyncio.wait_for(self.cm.__aexit__(None, None, None), self.args.timeout)
        except Exception:
            pass

    def alive(self):
        return self.proto is not None and self.proto.terminated is None

    def send(self, t, payload=b""):
        if self.args.verbose:
            self.out("      C->S %s %s" % (pname(t), hexs(payload)))
        self.proto._quic.send_stream_data(self.proto.stream_id, frame(t, payload), end_stream=False)
        self.proto.transmit()

    def send_update(self, x, y, z, dest=None, run=0, back=0):
        dx, dz = (x, z) if dest is None else dest
        self.proto._quic.send_datagram_frame(frame(P_StandardUpdate, standard_update_up(dx, dz, y, x, z, run, back)))
        self.proto.transmit()
        self.pos = (x, y, z)

    def termination_text(self):
        t = self.proto.terminated
        if t is None:
            return "connection open"
        kind = "application" if t.frame_type is None else "transport (frame type %s)" % t.frame_type
        return "connection closed by peer: %s error code %d reason %r" % (kind, t.error_code, t.reason_phrase)

    # -- receiving --
    def note(self, t, p):
        self.log.append((t, p))
        if t == P_KickedPlayer:
            self.out("      !! server sent P_KickedPlayer")
        if self.args.verbose:
            extra = ""
            if t == P_ChatMessage and p:
                extra = " colour %d text %r" % (p[0], p[1:].decode("latin-1"))
            self.out("      (other) S->C %s %s%s" % (pname(t), hexs(p, 24), extra))
        if t == P_NewActor:
            self.new_actors.append(p)

    def pending(self, t):
        return any(x[0] == t for x in self.proto.inbox)

    async def expect(self, types, what, timeout=None):
        """Wait for the next stream packet whose type is in `types`; packets of other types
        are noted and skipped. Returns (type, payload)."""
        timeout = self.args.timeout if timeout is None else timeout
        if isinstance(types, int):
            types = {types}
        deadline = time.monotonic() + timeout
        skipped = []
        while True:
            while self.proto.inbox:
                t, p, _ = self.proto.inbox.pop(0)
                if t in types:
                    if self.args.verbose:
                        self.out("      S->C %s %s" % (pname(t), hexs(p)))
                    return t, p
                skipped.append(t)
                self.note(t, p)
            if self.proto.terminated is not None:
                raise StepFail("expected %s, got: %s (skipped %s)" % (what, self.termination_text(),
                                                                      [pname(x) for x in skipped]))
            left = deadline - time.monotonic()
            if left <= 0:
                raise StepFail("expected %s within %.0f s; received only %s" % (
                    what, timeout, [pname(x) for x in skipped] or "nothing"))
            self.proto.inbox_event.clear()
            try:
                await asyncio.wait_for(self.proto.inbox_event.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def reply(self, t, what, timeout=None):
        return (await self.expect({t}, what, timeout))[1]

    def last_self_update(self):
        lst = self.proto.updates.get(self.rid)
        return lst[-1] if lst else None

    async def wait_self_update(self, pred, after, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, u in reversed(self.proto.updates.get(self.rid, [])):
                if t < after:
                    break
                if pred(u):
                    return u
            if self.proto.terminated is not None:
                break
            await asyncio.sleep(0.05)
        last = self.last_self_update()
        raise StepFail("expected %s; last own-actor update: %s; %s" % (
            what, fmt_update(last[1]) if last else "none ever received", self.termination_text()))


def fmt_update(u):
    s = "RID %d X %.2f Z %.2f run %d back %d dest (%.2f, %.2f) mount %d len %d" % (
        u["rid"], u["x"], u["z"], u["run"], u["back"], u["dest_x"], u["dest_z"], u["mount"], u["length"])
    if u["energy"] is not None:
        s += " energy %d" % u["energy"]
    if u["fly_y"] is not None:
        s += " flyY %.2f" % u["fly_y"]
    return s


def fmt_pos(p):
    return "(%.2f, %.2f, %.2f)" % p


# --------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------
class Run:
    def __init__(self, args):
        self.args = args
        self.results = []  # (step, status, text)
        self.warnings = []
        self.world = load_world(args.world_dir) if args.world_dir else None
        self.user = "iop_" + "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(10))
        self.password = "pw-" + "".join(random.choice(string.ascii_letters) for _ in range(8))
        self.char_name = None
        self.template = None
        self.catalogue = None
        self.templates = {}

    def out(self, s):
        print(s, flush=True)

    def step(self, n, status, text):
        self.results.append((n, status, text))
        self.out("[step %s] %s: %s" % (n, status, text))

    def warn(self, text):
        self.warnings.append(text)
        self.out("   WARN: " + text)

    def info(self, text):
        self.out("   " + text)

    def check(self, cond, what, expected, got):
        if not cond:
            raise StepFail("%s: expected %s, received %s" % (what, expected, got))

    def soft(self, cond, what, expected, got):
        if not cond:
            self.warn("%s: expected %s, received %s" % (what, expected, got))
        return cond

    # --- step 1 ---
    async def connect(self, label="1"):
        s = Session(self.args, self.out)
        try:
            alpn = await s.open()
        except Exception as e:
            raise StepFail("QUIC handshake with %s:%d failed: %r" % (self.args.host, self.args.port, e))
        self.check(alpn == ALPN, "ALPN", ALPN, alpn)
        return s

    # --- step 2 ---
    async def create_account(self, s):
        self.info("user %r, password md5 %s" % (self.user, md5_hex(self.password)))
        s.send(P_CreateAccount, creds(self.user, self.password) + str8(obfuscate_email("interop@example.com")))
        p = await s.reply(P_CreateAccount, "P_CreateAccount reply")
        self.check(p == b"Y", "P_CreateAccount reply", '"Y" (59)', hexs(p))
        await self.verify(s, expect_chars=[])

    async def verify(self, s, expect_chars=None, retries=0):
        for attempt in range(retries + 1):
            s.send(P_VerifyAccount, creds(self.user, self.password))
            p = await s.reply(P_VerifyAccount, "P_VerifyAccount reply")
            if p[:1] == b"L" and attempt < retries:
                self.warn('P_VerifyAccount answered "L" (already logged in) right after a code-0 close; retrying')
                await asyncio.sleep(1.0)
                continue
            break
        self.check(p[:1] == b"Y", "P_VerifyAccount reply", '"Y" + character list', hexs(p))
        try:
            chars = parse_char_list(Reader(p, 1))
        except ParseError as e:
            raise StepFail("P_VerifyAccount character list does not parse (%s): %s" % (e, hexs(p)))
        if expect_chars is not None:
            self.check([c["name"] for c in chars] == expect_chars, "P_VerifyAccount character names",
                       expect_chars, chars)
        return chars

    # --- step 3 ---
    async def fetch_catalogue(self, s):
        s.send(P_FetchActors, b"")
        blocks = []
        while True:
            p = await s.reply(P_FetchActors, "P_FetchActors block")
            self.check(len(p) > 0, "P_FetchActors block", "non-empty block", "empty payload")
            blocks.append(p)
            if p[:1] == b"Y":
                break
            self.check(len(blocks) < 5000, "P_FetchActors", "a final \"Y\" block", "over 5000 blocks")
        kinds = []
        cat = dict(assignment=None, attrs=None, items=[], actors=[], actors_total=None)
        for p in blocks:
            k = p[:2].decode("latin-1") if p[:1] == b"I" else p[:1].decode("latin-1")
            kinds.append(k)
            body = p[len(k):]
            if k == "A":
                def fa(r):
                    a = r.u8()
                    return a, [dict(skill=r.u8(), hidden=r.u8(), name=r.str8()) for _ in range(40)]
                lab, v = try_variants(body, [("A", fa)])
                self.check(lab, '"A" attributes block', "assignment u8 + 40 x (isSkill, hidden, str8 name)", v)
                cat["assignment"], cat["attrs"] = v
            elif k == "D":
                lab, v = try_variants(body, [("D", lambda r: [r.str8() for _ in range(20)])])
                self.soft(lab, '"D" damage types block', "20 x str8", v)
            elif k == "E":
                def fe(r):
                    r.u32(); r.u16(); r.u8(); r.u8(); r.u8()
                    for _ in range(12):
                        r.str8(); r.u16(); r.u8(); r.u8()
                    for _ in range(20):
                        r.str8(); r.u16()
                    return True
                lab, v = try_variants(body, [("E", fe)])
                self.soft(lab, '"E" environment block', "reference §5 layout", "%s %s" % (v, hexs(p)))
            elif k in ("IN", "IY"):
                variants = []
                if k == "IN":
                    variants = [("V1 (misc on every item)", lambda r: parse_all(r, lambda q: parse_item(q, True))),
                                ("V0 (misc only on other)", lambda r: parse_all(r, lambda q: parse_item(q, False)))]
                else:
                    def tot_first(v1):
                        def f(r):
                            t = r.u16()
                            return t, parse_all(r, lambda q: parse_item(q, v1))
                        return f

                    def tot_last(v1):
                        def f(r):
                            items = []
                            while r.left() > 2:
                                items.append(parse_item(r, v1))
                            return r.u16(), items
                        return f
                    variants = [("total first, V1", tot_first(True)), ("total first, V0", tot_first(False)),
                                ("total last, V1", tot_last(True)), ("total last, V0", tot_last(False))]
                lab, v = try_variants(body, variants)
                if not lab:
                    self.warn('"%s" items block does not parse with any reference §5 variant: %s; %s' % (k, v, hexs(p)))
                    continue
                cat.setdefault("item_layout", set()).add(lab)
                if k == "IN":
                    cat["items"] += v
                else:
                    cat["items_total"] = v[0]
                    cat["items"] += v[1]
            elif k == "F":
                def ff(r):
                    def one(q):
                        n = q.u8()
                        return q.u8(), q.take(n)
                    return parse_all(r, one)
                lab, v = try_variants(body, [("F", ff)])
                self.soft(lab, '"F" factions block', "repeated (u8 len, index u8, name)", hexs(p))
            elif k == "N":
                lab, v = try_variants(body, [("N", lambda r: parse_all(r, parse_actor_tpl))])
                self.check(lab, '"N" actor block', "whole actor templates (reference §5)", "%s: %s" % (v, hexs(p)))
                cat.setdefault("n_sizes", []).append(len(v))
                cat["actors"] += v
            elif k == "Y":
                def yf(r):
                    t = r.u16()
                    return t, parse_all(r, parse_actor_tpl)

                def yl(r):
                    acts = []
                    while r.left() > 2:
                        acts.append(parse_actor_tpl(r))
                    return r.u16(), acts
                lab, v = try_variants(body, [("total u16 then remaining templates", yf),
                                             ("remaining templates then total u16", yl)])
                self.check(lab, '"Y" final actor block', '"Y" + total u16 (reference §5)', "%s: %s" % (v, hexs(p)))
                if v[1]:
                    self.info('"Y" block layout: %s (%d template(s) in it)' % (lab, len(v[1])))
                cat["actors_total"] = v[0]
                cat["actors"] += v[1]
            else:
                self.warn("P_FetchActors: unknown block %r: %s" % (k, hexs(p)))
        self.info("catalogue blocks: %s; templates per \"N\" block %s" % (" ".join(kinds), cat.get("n_sizes")))
        ns = cat.get("n_sizes") or []
        self.soft(all(n == 2 for n in ns[:-1]) and (not ns or 1 <= ns[-1] <= 2), '"N" actor blocks',
                  "2 templates per block (the last may hold 1)", ns)
        if "item_layout" in cat:
            self.info("item layout matched: %s; %d items (IY total %s)" % (
                sorted(cat["item_layout"]), len(cat["items"]), cat.get("items_total")))
            if cat.get("items_total") is not None:
                self.soft(cat["items_total"] == len(cat["items"]), "P_FetchActors item total",
                          len(cat["items"]), cat["items_total"])
        self.check(cat["assignment"] is not None, "P_FetchActors", 'an "A" attributes block', kinds)
        self.check(cat["actors_total"] == len(cat["actors"]), "P_FetchActors actor total in \"Y\"",
                   "%d (templates received)" % len(cat["actors"]), cat["actors_total"])
        order_ok = kinds[:3] == ["A", "D", "E"]
        self.soft(order_ok, "P_FetchActors block order", "A, D, E, IN.., IY, F.., N.., Y", " ".join(kinds))
        self.templates = {a["id"]: a for a in cat["actors"]}
        self.catalogue = cat
        if self.world:
            wa = set(self.world["actors"].keys())
            self.soft(wa == set(self.templates), "catalogue template ids vs world data", sorted(wa), sorted(self.templates))
        return cat

    def pick_template(self):
        playable = [a for a in self.catalogue["actors"] if a["playable"]]
        self.check(playable, "catalogue", "at least one playable template", "none")
        if self.args.actor is not None:
            t = self.templates.get(self.args.actor)
            self.check(t and t["playable"], "--actor", "a playable template id", self.args.actor)
            return t
        return playable[0]

    def points(self, tpl):
        total = self.catalogue["assignment"]
        pts = [0] * 40
        if total <= 0:
            return pts
        fixed_avoid = {"health", "energy", "speed", "breath"}
        eligible = [i for i, a in enumerate(self.catalogue["attrs"])
                    if a["name"] and not a["hidden"] and not a["skill"] and a["name"].lower() not in fixed_avoid
                    and tpl["attrs"][i][0] + total <= tpl["attrs"][i][1]]
        if not eligible:
            eligible = [i for i, a in enumerate(self.catalogue["attrs"]) if a["name"]]
        # split the points over two attributes (exercise the array), e.g. 10 -> 6 + 4
        first = (total + 1) // 2 + (1 if total > 2 else 0)
        pts[eligible[0]] = min(first, total)
        if len(eligible) > 1:
            pts[eligible[1]] = total - pts[eligible[0]]
        else:
            pts[eligible[0]] = total
        return pts

    def gen_name(self):
        banned = ["king", "queen", "lord", "lady", "sir", "count", "duke", "duch", "admin", "gm"]
        letters = "abcdefhijnopqrtuvwxyz"
        while True:
            n = "Iop" + "".join(random.choice(letters) for _ in range(7))
            if not any(b in n.lower() for b in banned):
                return n

    async def create_character(self, s):
        cat = await self.fetch_catalogue(s)
        tpl = self.pick_template()
        self.template = tpl
        self.char_name = self.gen_name()
        pts = self.points(tpl)
        gender = 1 if tpl["genders"] == 2 else 0
        self.info("template %d (%s %s, genders %d), name %r, points %s" % (
            tpl["id"], tpl["race"], tpl["class"], tpl["genders"], self.char_name,
            {self.catalogue["attrs"][i]["name"] or i: v for i, v in enumerate(pts) if v}))
        body = creds(self.user, self.password) + u16(tpl["id"]) + bytes([gender, 0, 0, 0, 0])
        if cat["assignment"] > 0:
            body += bytes(pts)
        body += self.char_name.encode("latin-1")
        s.send(P_CreateCharacter, body)
        p = await s.reply(P_CreateCharacter, "P_CreateCharacter reply")
        self.check(p == b"Y", "P_CreateCharacter reply", '"Y"', "%s (%r)" % (hexs(p), p))
        chars = await self.verify(s, expect_chars=[self.char_name])
        c = chars[0]
        self.check((c["actor"], c["gender"]) == (tpl["id"], gender), "character list entry (actor, gender)",
                   (tpl["id"], gender), (c["actor"], c["gender"]))
        c1 = await self.fetch_character(s)
        exp = [(tpl["attrs"][i][0] + pts[i], tpl["attrs"][i][1]) for i in range(40)]
        diff = [(i, exp[i], c1["attrs"][i]) for i in range(40) if exp[i] != c1["attrs"][i]]
        self.check(not diff, "C1 attributes = template + assigned points", "no differences",
                   "differences (index, expected, got) %s" % diff)
        if self.world and self.world.get("start_gold") is not None:
            self.soft(c1["gold"] == self.world["start_gold"], "C1 gold", self.world["start_gold"], c1["gold"])
            self.soft(c1["rep"] == self.world["start_rep"], "C1 reputation", self.world["start_rep"], c1["rep"])
        self.soft(c1["home"] == tpl["faction"], "C1 home faction", tpl["faction"], c1["home"])
        self.c1 = c1
        return c1

    async def fetch_character(self, s, index=0):
        s.send(P_FetchCharacter, creds(self.user, self.password) + u8(index))
        c1, slots, kinds = None, 0, []
        while True:
            p = await s.reply(P_FetchCharacter, "P_FetchCharacter block")
            k = p[:2].decode("latin-1") if p[:1] == b"C" else p[:1].decode("latin-1")
            kinds.append(k)
            if k == "N":
                raise StepFail('P_FetchCharacter answered "N" (failure)')
            if k == "C1":
                r = Reader(p, 2)
                try:
                    c1 = dict(gold=r.u32(), rep=r.u16(), level=r.u16(), xp=r.u32(), home=r.u8(),
                              attrs=[(r.u16(), r.u16()) for _ in range(40)])
                except ParseError as e:
                    raise StepFail('"C1" block does not parse (%s): %s' % (e, hexs(p)))
                self.soft(r.left() == 0, '"C1" block length', 2 + 4 + 2 + 2 + 4 + 1 + 160, len(p))
            elif k == "C3":
                r = Reader(p, 2)
                try:
                    while r.left():
                        if r.u8() == 99:
                            pass
                        else:
                            r.take(83); r.u16()
                        slots += 1
                except ParseError as e:
                    self.warn('"C3" block does not parse (%s): %s' % (e, hexs(p)))
            elif k == "F":
                r = Reader(p, 1)
                self.soft(len(p) == 5, '"F" block', '"F" + nQuests u16 + nSpells u16', hexs(p))
                break
        self.info("P_FetchCharacter blocks: %s; C1 gold %s rep %s level %s xp %s; %d inventory slots" % (
            " ".join(kinds), c1 and c1["gold"], c1 and c1["rep"], c1 and c1["level"], c1 and c1["xp"], slots))
        self.check(c1 is not None, "P_FetchCharacter", 'a "C1" block', kinds)
        self.soft(slots == 46, '"C3" inventory slots', 46, slots)
        return c1

    # --- step 4 ---
    async def start_game(self, s):
        s.new_actors = []
        s.send(P_StartGame, creds(self.user, self.password) + u8(0))
        order, parts, ca, rid, new_actors = [], [], None, None, []
        t0 = time.monotonic()
        deadline = t0 + self.args.timeout
        while time.monotonic() < deadline:
            if rid is not None and len(parts) >= 12:
                break
            try:
                t, p = await s.expect({P_ChangeArea, P_NewActor, P_StartGame}, "start sequence",
                                      timeout=max(0.05, deadline - time.monotonic()))
            except StepFail as e:
                if rid is not None:
                    break
                raise StepFail("%s (sequence so far: %s)" % (e, " ".join(order) or "nothing"))
            if t == P_ChangeArea:
                order.append("ChangeArea")
                try:
                    ca = parse_change_area(p)
                except ParseError as e:
                    raise StepFail("P_ChangeArea does not parse (%s): %s" % (e, hexs(p)))
            elif t == P_NewActor:
                order.append("NewActor")
                new_actors.append(p)
            else:
                if p == b"N":
                    raise StepFail('P_StartGame answered "N" (failure)')
                if len(p) == 2:
                    order.append("StartGame(RID)")
                    rid = struct.unpack("<H", p)[0]
                    if len(parts) < 12:
                        deadline = max(deadline, time.monotonic() + 3.0)
                else:
                    order.append("StartGame(bar)")
                    try:
                        r = Reader(p)
                        first = r.u8()
                        slots = [r.str16() for _ in range(3)]
                        if r.left():
                            raise ParseError("%d trailing bytes" % r.left())
                        parts.append((first, slots))
                    except ParseError as e:
                        self.warn("P_StartGame action-bar part does not parse (%s): %s" % (e, hexs(p)))
                        parts.append((None, None))
        comp = []
        for o in order:
            if comp and comp[-1][0] == o:
                comp[-1][1] += 1
            else:
                comp.append([o, 1])
        self.info("start sequence: " + ", ".join("%s x%d" % (o, n) if n > 1 else o for o, n in comp))
        self.check(ca is not None, "start sequence", "a P_ChangeArea", order)
        self.check(rid is not None, "start sequence", "P_StartGame with RuntimeID u16 (2 bytes)", order)
        self.soft(order[0] == "ChangeArea", "start sequence order", "P_ChangeArea first", order[0])
        self.soft(len(parts) == 12, "P_StartGame action-bar parts", 12, len(parts))
        firsts = [f for f, _ in parts]
        self.soft(firsts == list(range(0, 36, 3)), "action-bar firstSlot values", list(range(0, 36, 3)), firsts)
        if order.index("StartGame(RID)") < len(order) - 1 and "StartGame(bar)" in order[order.index("StartGame(RID)"):]:
            self.warn("P_StartGame(RID) arrived before some action-bar parts (docs/protocol.md says parts, then RID)")
        s.rid, s.area, s.pos = rid, ca, (ca["x"], ca["y"], ca["z"])
        self.info("RuntimeID %d; area %r instance handle %d at %s yaw %.1f pvp %d gravity %d weather %d" % (
            rid, ca["area"], ca["handle"], fmt_pos(s.pos), ca["yaw"], ca["pvp"], ca["gravity"], ca["weather"]))
        mine = None
        for p in new_actors:
            try:
                na = parse_new_actor(p, self.templates)
            except ParseError as e:
                self.warn("P_NewActor does not parse (%s): %s" % (e, hexs(p)))
                continue
            if na["rid"] == rid:
                mine = na
            else:
                self.check_npc(na)
            self.soft(na["handle"] == ca["handle"], "P_NewActor instance handle", ca["handle"],
                      "%d (RID %d)" % (na["handle"], na["rid"]))
        self.info("P_NewActor: %d actor(s)%s" % (len(new_actors), "" if mine else " (none for own RID)"))
        if mine:
            self.soft(mine["name"] == self.char_name and mine["template"] == self.template["id"] and mine["human"] == 1,
                      "own P_NewActor", "name %r template %d human 1" % (self.char_name, self.template["id"]),
                      "name %r template %d human %d" % (mine["name"], mine["template"], mine["human"]))
            self.soft(dist3((mine["x"], mine["y"], mine["z"]), s.pos) < 0.01, "own P_NewActor position",
                      fmt_pos(s.pos), fmt_pos((mine["x"], mine["y"], mine["z"])))
        else:
            self.info("note: no P_NewActor for the player's own RuntimeID %d (spec ambiguous: transport.md "
                      "says 'P_NewActor for every actor in range'; the client knows itself from the list)" % rid)
        await self.ack_change_area(s)
        return ca

    def combat_note(self, s):
        hits = [p for t, p in s.log if t == P_AttackActor and p[:1] == b"Y"]
        hp = [struct.unpack_from("<H", p, 4)[0] for t, p in s.log
              if t == P_StatUpdate and len(p) == 6 and p[:1] == b"A" and struct.unpack_from("<H", p, 1)[0] == s.rid
              and p[3] == (self.world or {}).get("health_stat", 0)]
        if not hits:
            return ""
        return " (the player was attacked %d time(s); own Health updates: %s; probably killed by NPCs and " \
               "respawned by the Death hook)" % (len(hits), hp[-4:])

    def check_npc(self, na):
        """An NPC's P_NewActor (reference §4.5) against its template: speed and health value/max."""
        t = self.templates.get(na["template"])
        if not t or t["playable"] or "speed" not in na or not self.world:
            return
        hs, ss = self.world.get("health_stat", -1), self.world.get("speed_stat", -1)
        if ss is not None and ss >= 0:
            self.soft(na["speed"] == t["attrs"][ss], "P_NewActor speed of NPC RID %d (template %d)" % (na["rid"], t["id"]),
                      t["attrs"][ss], na["speed"])
        if hs is not None and hs >= 0:
            v, m = t["attrs"][hs]
            self.soft(na["health"][1] == m and na["health"][0] <= max(v, m), "P_NewActor health of NPC RID %d (template %d)"
                      % (na["rid"], t["id"]), "max %d" % m, na["health"])
        self.soft(na["human"] == 0, "P_NewActor human flag of NPC RID %d" % na["rid"], 0, na["human"])

    async def ack_change_area(self, s):
        if self.args.ack_change_area:
            s.send(P_ChangeArea, b"")

    def check_area(self, ca, area_name, portal, what, check_yaw=True):
        self.check(ca["area"].lower() == area_name.lower(), what + " area", repr(area_name), repr(ca["area"]))
        if portal is not None:
            got = (ca["x"], ca["y"], ca["z"])
            self.check(dist3(got, pos_of(portal)) < 0.05, what + " position (portal %r)" % portal["name"],
                       fmt_pos(pos_of(portal)), fmt_pos(got))
            if check_yaw:
                self.soft(abs(ca["yaw"] - portal["yaw"]) < 0.05, what + " yaw (portal %r)" % portal["name"],
                          portal["yaw"], ca["yaw"])
        if self.world:
            a = find_area(self.world, area_name)
            if a:
                self.soft(ca["pvp"] == a["pvp"], what + " PvP flag", a["pvp"], ca["pvp"])
                self.soft(ca["gravity"] == a["gravity"], what + " gravity", a["gravity"], ca["gravity"])

    # --- step 5 ---
    async def movement(self, s, direction):
        t0 = time.monotonic()
        await asyncio.sleep(1.2)
        ups = [u for t, u in s.proto.updates.get(s.rid, []) if t >= t0]
        self.info("idle: %d own-actor update(s) in 1.2 s; datagrams so far %d; payload lengths seen %s" % (
            len(ups), s.proto.dgram_count, dict(sorted(s.proto.update_lengths.items()))))
        if ups:
            u = ups[-1]
            self.soft(abs(u["x"] - s.pos[0]) < 0.05 and abs(u["z"] - s.pos[2]) < 0.05,
                      "idle own update position", "(%.2f, %.2f)" % (s.pos[0], s.pos[2]), fmt_update(u))
            es = self.world.get("energy_stat") if self.world else None
            if es is not None:
                exp_len = 24 if es >= 0 else 22
                self.soft(u["length"] == exp_len, "own-actor update payload length (EnergyStat %d)" % es,
                          exp_len, u["length"])
                if es >= 0 and u["energy"] is not None:
                    self.soft(u["energy"] == self.c1["attrs"][es][0], "own-actor update Energy tail",
                              self.c1["attrs"][es][0], u["energy"])
        x0, y0, z0 = s.pos
        nx, nz = x0 + 3.0 * direction[0], z0 + 3.0 * direction[1]
        sent = time.monotonic()
        s.send_update(nx, y0, nz, dest=(nx, nz))
        self.info("sent P_StandardUpdate: X %.2f Z %.2f (3 units from the start), waiting for the echo" % (nx, nz))
        u = await s.wait_self_update(lambda u: abs(u["x"] - nx) < 0.05 and abs(u["z"] - nz) < 0.05, sent,
                                     self.args.timeout, "an own-actor P_StandardUpdate (RID %d) at X %.2f Z %.2f" % (s.rid, nx, nz))
        self.info("echo after %.0f ms: %s" % ((time.monotonic() - sent) * 1000, fmt_update(u)))
        self.soft(abs(u["dest_x"] - nx) < 0.05 and abs(u["dest_z"] - nz) < 0.05 and u["run"] == 0 and u["mount"] == 0,
                  "echo dest/run/mount", "dest (%.2f, %.2f) run 0 mount 0" % (nx, nz), fmt_update(u))
        others = {rid for rid in s.proto.updates if rid != s.rid}
        self.info("updates for %d other actor(s) also received" % len(others))
        if s.proto.dgram_errors:
            self.warn("datagram problems: %s" % s.proto.dgram_errors[:3])

    async def datagram_robustness(self, s):
        """transport.md §Unreliable channel: bad datagrams are dropped, the connection stays up;
        reference §4.1: floats clamped, speed clamp keeps the old X/Z."""
        q = s.proto._quic
        x, y, z = s.pos

        def raw(d):
            q.send_datagram_frame(d)
            s.proto.transmit()
        up = lambda X, Y, Z, dx, dz: frame(P_StandardUpdate, standard_update_up(dx, dz, Y, X, Z))
        problems = []
        # (a) malformed: frame length runs past the datagram end
        raw(struct.pack("<HB", 30, 14) + standard_update_up(x + 50, z, y, x + 50, z))
        # (b) a chat frame in a datagram (only type 14 allowed)
        raw(frame(P_ChatMessage, b"interop: this chat line came by datagram and must be dropped"))
        # (c) a valid frame followed by garbage: the whole datagram must be dropped
        raw(up(x + 50, y, z, x + 50, z) + b"\x01")
        await asyncio.sleep(0.6)
        if not s.alive():
            raise StepFail("bad datagrams closed the connection (transport.md: dropped, connection stays up): "
                           + s.termination_text())
        u = s.last_self_update()
        if u is None or abs(u[1]["x"] - x) > 0.05 or abs(u[1]["z"] - z) > 0.05:
            problems.append("after malformed/ill-typed datagrams (each would have moved X by +50) own position is "
                            "%s, expected X %.2f Z %.2f unchanged" % (fmt_update(u[1]) if u else "unknown", x, z))
        chats = [p for t, p in s.log if t == P_ChatMessage and b"by datagram" in p]
        await asyncio.sleep(0.1)
        while s.proto.inbox:
            t, p, _ = s.proto.inbox.pop(0)
            s.note(t, p)
            if t == P_ChatMessage and b"by datagram" in p:
                chats.append(p)
        if chats:
            problems.append("a P_ChatMessage sent in a datagram was relayed as chat: %s" % hexs(chats[0]))
        # (d) two frames in one datagram: both processed in order
        t0 = time.monotonic()
        raw(up(x + 1, y, z, x + 1, z) + up(x + 2, y, z, x + 2, z))
        try:
            await s.wait_self_update(lambda u: abs(u["x"] - (x + 2)) < 0.05, t0, self.args.timeout,
                                     "own update at X %.2f after a datagram with two frames (the second wins)" % (x + 2))
            x = x + 2
        except StepFail as e:
            problems.append(str(e))
        # (e) NaN / Inf floats: must not move the player (ClampWorldCoord; docs: keep the old value)
        await asyncio.sleep(0.25)
        t0 = time.monotonic()
        nan, inf = float("nan"), float("inf")
        raw(frame(P_StandardUpdate, standard_update_up(nan, inf, nan, nan, -inf)))
        await asyncio.sleep(0.8)
        u = s.last_self_update()
        if u is None or u[0] < t0 or not (abs(u[1]["x"] - x) < 0.05 and abs(u[1]["z"] - z) < 0.05):
            problems.append("after an update with NaN/Inf floats the own position is %s, expected X %.2f Z %.2f "
                            "(ClampWorldCoord, docs/protocol.md: keep previous value)" % (
                                fmt_update(u[1]) if u else "unknown", x, z))
        elif math.isnan(u[1]["dest_x"]) or math.isinf(u[1]["dest_z"]):
            problems.append("a NaN/Inf destination was echoed: %s" % fmt_update(u[1]))
        # (f) speed clamp: a 100-unit jump 200 ms after an accepted update exceeds
        #     maxDelta = max(2, 0.15 (ratio + 0.5) elapsed) <= 45, so X/Z stay (Dest = old spot)
        s.send_update(x, y, z)
        await asyncio.sleep(0.2)
        raw(up(x + 100, y, z, x, z))
        await asyncio.sleep(0.8)
        u = s.last_self_update()
        if u is None or not (abs(u[1]["x"] - x) < 0.05 and abs(u[1]["z"] - z) < 0.05):
            problems.append("a 100-unit jump 200 ms after the previous update was accepted (reference §4.1 step 4 "
                            "speed clamp: keep old X/Z): %s" % (fmt_update(u[1]) if u else "no update"))
        # back to a known position
        await asyncio.sleep(0.25)
        s.send_update(x, y, z)
        await self.confirm_position(s, "resync after robustness checks")
        if s.proto.dgram_errors:
            problems.append("server datagrams that do not parse: %s" % s.proto.dgram_errors[:2])
        if problems:
            raise StepFail("; ".join(problems))

    # --- walking ---
    async def walk(self, s, target, stop_on_warp=True):
        """Walk in straight steps (<= step units per 200 ms) to target (x, y, z).
        Returns True if a P_ChangeArea arrived on the way."""
        x, y, z = s.pos
        tx, ty, tz = target
        total = math.hypot(tx - x, tz - z)
        n = max(1, int(math.ceil(total / self.args.step)))
        for i in range(1, n + 1):
            f = i / n
            nx, ny, nz = x + (tx - x) * f, y + (ty - y) * f, z + (tz - z) * f
            s.send_update(nx, ny, nz, dest=(nx, nz))
            await asyncio.sleep(0.2)
            if stop_on_warp and s.pending(P_ChangeArea):
                return True
            if not s.alive():
                raise StepFail("while walking: " + s.termination_text())
        return False

    async def confirm_position(self, s, what):
        x, y, z = s.pos
        sent = time.monotonic()
        return await s.wait_self_update(lambda u: abs(u["x"] - x) < 0.1 and abs(u["z"] - z) < 0.1, sent - 0.25,
                                        self.args.timeout, "own-actor update at X %.2f Z %.2f (%s)" % (x, z, what))

    async def await_warp(self, s, what):
        p = await s.reply(P_ChangeArea, what)
        try:
            ca = parse_change_area(p)
        except ParseError as e:
            raise StepFail("P_ChangeArea does not parse (%s): %s" % (e, hexs(p)))
        old = s.area
        s.area, s.pos = ca, (ca["x"], ca["y"], ca["z"])
        self.info("P_ChangeArea: %r handle %d at %s yaw %.1f pvp %d gravity %d" % (
            ca["area"], ca["handle"], fmt_pos(s.pos), ca["yaw"], ca["pvp"], ca["gravity"]))
        self.soft(ca["handle"] != old["handle"], "instance handle after an area change", "a different handle",
                  ca["handle"])
        await self.ack_change_area(s)
        return ca

    def plan_route(self, s):
        a = self.args
        if a.portal:
            px, py, pz, size = a.portal
            via = dict(index=-1, name="--portal", link_area=a.dest_area or "?", link_name="", x=px, y=py, z=pz,
                       size=size, yaw=0.0)
            arr = None
            ret = None
            if a.return_portal:
                rx, ry, rz, rs = a.return_portal
                ret = dict(index=-2, name="--return-portal", link_area=s.area["area"], link_name="", x=rx, y=ry, z=rz,
                           size=rs, yaw=0.0)
            return via, a.dest_area, arr, ret, None
        if not self.world:
            return None
        here = find_area(self.world, s.area["area"])
        if not here:
            return None
        cands = []
        for p in here["portals"]:
            if not p["link_area"]:
                continue
            dest, arr = portal_destination(self.world, p)
            if dest is None or arr is None or dest["name"].lower() == here["name"].lower():
                continue
            if a.via and dest["name"].lower() != a.via.lower():
                continue
            rets = [q for q in dest["portals"] if q["link_area"].lower() == here["name"].lower()]
            if not rets:
                continue
            ret = min(rets, key=lambda q: (q["index"] == arr["index"], dist3(pos_of(q), pos_of(arr))))
            _, back = portal_destination(self.world, ret)
            need_wait = ret["index"] == arr["index"]
            cost = dist2(s.pos, pos_of(p)) + (1000 if need_wait else 0)
            cands.append((cost, dest["name"], p, dest, arr, ret, back))
        if not cands:
            return None
        cands.sort(key=lambda c: (c[0], c[1]))
        _, _, p, dest, arr, ret, back = cands[0]
        return p, dest["name"], arr, ret, back

    async def portal_trip(self, s):
        plan = self.plan_route(s)
        if plan is None:
            raise StepFail("no portal to another area with a way back found (give --world-dir, or --portal "
                           "X,Y,Z,SIZE --dest-area NAME [--return-portal X,Y,Z,SIZE])")
        via, dest_name, arr, ret, back = plan
        home_name = s.area["area"]
        self.info("route: %r portal %r at %s (size %.1f) -> %r arrival %s; return via %s -> %s" % (
            home_name, via["name"], fmt_pos(pos_of(via)), via["size"], dest_name,
            "%r at %s" % (arr["name"], fmt_pos(pos_of(arr))) if arr else "?",
            "%r at %s" % (ret["name"], fmt_pos(pos_of(ret))) if ret else "?",
            "%r at %s" % (back["name"], fmt_pos(pos_of(back))) if back else "?"))
        t0 = time.monotonic()
        warped = await self.walk(s, pos_of(via))
        self.info("walked %s into the portal in %.1f s%s" % (
            fmt_pos(s.pos), time.monotonic() - t0, " (warp already pending)" if warped else ""))
        ca = await self.await_warp(s, "P_ChangeArea to %r after entering portal %r" % (dest_name, via["name"]))
        t_arrive = time.monotonic()
        self.check_area(ca, dest_name, arr, "P_ChangeArea (outbound)")
        rid_before = s.rid
        await asyncio.sleep(0.5)
        await s.wait_self_update(lambda u: abs(u["x"] - ca["x"]) < 0.1 and abs(u["z"] - ca["z"]) < 0.1,
                                     t_arrive, self.args.timeout,
                                     "own-actor updates (RID %d) at the arrival point in %r" % (s.rid, dest_name))
        self.info("own-actor updates continue in %r with the same RID %d" % (dest_name, rid_before))
        if ret is None:
            raise StepFail("no return portal known (give --return-portal X,Y,Z,SIZE)")
        # step out of the arrival portal, and wait for the re-entry lock if we must use the same portal
        dest_area = find_area(self.world, dest_name) if self.world else None
        out_spot = safe_spot(dest_area, s.pos, 0, (arr["size"] if arr else 5.0) + 8.0)
        await self.walk(s, out_spot)
        await self.confirm_position(s, "stepped out of the arrival portal")
        self.info("stepped out to %s" % fmt_pos(s.pos))
        same = arr is not None and ret["index"] == arr["index"] or (
            arr is None and dist3(pos_of(ret), (ca["x"], ca["y"], ca["z"])) < 0.5)
        if same:
            wait = PORTAL_LOCK_S + 1.5 - (time.monotonic() - t_arrive)
            if wait > 0:
                self.info("the return portal is the arrival portal: waiting %.0f s for the %g s re-entry lock "
                          "(reference §7.7)" % (wait, PORTAL_LOCK_S))
                end = time.monotonic() + wait
                while time.monotonic() < end:
                    await asyncio.sleep(min(1.0, end - time.monotonic()))
                    if s.pending(P_ChangeArea) or not s.alive():
                        break
                if s.pending(P_ChangeArea):
                    ca2 = await self.await_warp(s, "unexpected warp")
                    raise StepFail("unexpected P_ChangeArea to %r at %s while waiting out of the portal%s" % (
                        ca2["area"], fmt_pos(s.pos), self.combat_note(s)))
                attacked = [p for t, p in s.log if t == P_AttackActor and p[:1] == b"Y"]
                if attacked:
                    self.info("(was attacked %d time(s) while waiting)" % len(attacked))
        t1 = time.monotonic()
        warped = await self.walk(s, pos_of(ret))
        self.info("walked into the return portal %r at %s in %.1f s" % (ret["name"], fmt_pos(s.pos), time.monotonic() - t1))
        ca = await self.await_warp(s, "P_ChangeArea back to %r after entering portal %r" % (home_name, ret["name"]))
        if ca["area"].lower() != home_name.lower():
            raise StepFail("P_ChangeArea (return): expected area %r, received %r at %s%s" % (
                home_name, ca["area"], fmt_pos(s.pos), self.combat_note(s)))
        self.check_area(ca, home_name, back, "P_ChangeArea (return)")
        t_back = time.monotonic()
        await s.wait_self_update(lambda u: abs(u["x"] - ca["x"]) < 0.1 and abs(u["z"] - ca["z"]) < 0.1,
                                 t_back, self.args.timeout, "own-actor updates at the return arrival point")
        return ca

    # --- step 7 ---
    async def relogin(self, s_old, logout_area, logout_pos):
        await s_old.close(0)
        self.info("closed with application code 0 (%s)" % ("peer had closed first: " + s_old.termination_text()
                                                         if s_old.proto.terminated and s_old.proto.terminated.error_code != 0
                                                         else "ok"))
        await asyncio.sleep(self.args.relogin_delay)
        s = await self.connect()
        await self.verify(s, expect_chars=[self.char_name], retries=3)
        c1 = await self.fetch_character(s)
        self.soft((c1["gold"], c1["level"], c1["attrs"]) == (self.c1["gold"], self.c1["level"], self.c1["attrs"]),
                  "C1 after relogin (gold, level, attributes)", "unchanged", "changed: %s" % c1)
        ca = await self.start_game(s)
        got = (ca["x"], ca["y"], ca["z"])
        self.check(ca["area"].lower() == logout_area.lower(), "area after relogin", repr(logout_area), repr(ca["area"]))
        d = dist2(got, logout_pos)
        self.check(d < 1.0, "position after relogin (X/Z within 1.0 of the logout point)",
                   fmt_pos(logout_pos), "%s (%.2f away)" % (fmt_pos(got), d))
        self.soft(abs(got[1] - logout_pos[1]) < 1.0, "Y after relogin", "%.2f" % logout_pos[1], "%.2f" % got[1])
        self.info("back in %r at %s (%.2f from the logout point)" % (ca["area"], fmt_pos(got), d))
        return s

    async def main(self):
        a = self.args
        self_test()
        self.out("interop client -> %s:%d (world data: %s)" % (
            a.host, a.port, "%s, %s" % (a.world_dir, self.world["kind"]) if self.world else "none"))
        s = None
        try:
            s = await self.connect()
            self.step(1, "PASS", "QUIC handshake, ALPN %s, bidi stream %d" % (s.proto.alpn, s.proto.stream_id))
        except StepFail as e:
            self.step(1, "FAIL", str(e))
            return self.finish()
        try:
            await self.create_account(s)
            self.step(2, "PASS", "P_CreateAccount \"Y\", P_VerifyAccount \"Y\" (no characters)")
            await self.create_character(s)
            self.step(3, "PASS", "catalogue parsed (%d templates), character %r created and fetched" % (
                len(self.templates), self.char_name))
        except StepFail as e:
            self.step(len(self.results) + 1, "FAIL", str(e))
            await s.close(0)
            return self.finish()
        try:
            ca = await self.start_game(s)
            tpl_w = self.world["actors"].get(self.template["id"]) if self.world else None
            if tpl_w and tpl_w["start_area"]:
                area = find_area(self.world, tpl_w["start_area"])
                sp = portal_by_name(area, tpl_w["start_portal"]) if area else None
                self.check_area(ca, tpl_w["start_area"], sp, "start P_ChangeArea", check_yaw=False)
            self.step(4, "PASS", "in game: RID %d, area %r at %s" % (s.rid, ca["area"], fmt_pos(s.pos)))
        except StepFail as e:
            self.step(4, "FAIL", str(e))
            await s.close(0)
            return self.finish()
        plan = None
        try:
            plan = self.plan_route(s)
        except Exception:
            plan = None
        direction = (1.0, 0.0)
        if plan:
            via = plan[0]
            dx, dz = via["x"] - s.pos[0], via["z"] - s.pos[2]
            n = math.hypot(dx, dz)
            if n > 0.01:
                direction = (dx / n, dz / n)
        try:
            await self.movement(s, direction)
            self.step(5, "PASS", "own-actor P_StandardUpdate echoes the move")
        except StepFail as e:
            self.step(5, "FAIL", str(e))
        if a.negative and s.alive():
            try:
                await self.datagram_robustness(s)
                self.step("5b", "PASS", "bad datagrams dropped, two-frame datagram, NaN and speed clamp")
            except StepFail as e:
                self.step("5b", "FAIL", str(e))
        if s.alive():
            try:
                await self.portal_trip(s)
                self.step(6, "PASS", "through the portal to the other area and back")
            except StepFail as e:
                self.step(6, "FAIL", str(e))
        else:
            self.step(6, "SKIP", "connection gone: " + s.termination_text())
        try:
            if not s.alive():
                raise StepFail("connection gone before logout: " + s.termination_text())
            # step away from any portal we may be standing in, then log out
            here = find_area(self.world, s.area["area"]) if self.world else None
            spot = safe_spot(here, s.pos, 0, 10.0)
            await self.walk(s, spot, stop_on_warp=True)
            if s.pending(P_ChangeArea):
                ca = await self.await_warp(s, "warp")
                raise StepFail("unexpected P_ChangeArea to %r while stepping away before logout" % ca["area"])
            u = await self.confirm_position(s, "logout point")
            logout_pos = (u["x"], s.pos[1], u["z"])
            logout_area = s.area["area"]
            self.info("logging out in %r at %s" % (logout_area, fmt_pos(logout_pos)))
            s2 = await self.relogin(s, logout_area, logout_pos)
            s = s2
            self.step(7, "PASS", "relogin kept area %r and position" % logout_area)
        except StepFail as e:
            self.step(7, "FAIL", str(e))
        if s is not None:
            for e in (s.proto.frame_errors + s.proto.dgram_errors)[:5]:
                self.warn("transport: " + e)
            await s.close(0)
        if a.negative:
            await self.stream_violations()
        return self.finish()

    async def expect_close(self, s, code, what, timeout=None):
        deadline = time.monotonic() + (timeout or self.args.timeout)
        while time.monotonic() < deadline and s.proto.terminated is None:
            await asyncio.sleep(0.05)
        t = s.proto.terminated
        exp = "application close code %d" % code
        if t is None:
            await s.close(0)
            raise StepFail("%s: expected %s, the connection stayed open for %.0f s" % (what, exp, timeout or self.args.timeout))
        if t.frame_type is not None or t.error_code != code:
            raise StepFail("%s: expected %s, got %s" % (what, exp, s.termination_text()))
        return t

    async def stream_violations(self):
        """transport.md §Reliable channel and §Application close codes, each on a fresh connection."""
        cases = [
            ("8a", "frame with len 0", lambda sid: (b"\x00\x00", False), 2),
            ("8b", "truncated frame at stream end", lambda sid: (b"\x10\x00\x02ab", True), 2),
            ("8c", "65535-byte frame (over the server maximum)",
             lambda sid: (struct.pack("<HB", 0xFFFF, P_ChatMessage) + b"x" * 0xFFFE, False), 2),
            ("8d", "P_ChatMessage before login", lambda sid: (frame(P_ChatMessage, b"hello"), False), 2),
        ]
        for label, what, mk, code in cases:
            try:
                s = await self.connect()
                data, fin = mk(s.proto.stream_id)
                s.proto._quic.send_stream_data(s.proto.stream_id, data, end_stream=fin)
                s.proto.transmit()
                await self.expect_close(s, code, what)
                self.step(label, "PASS", "%s -> %s" % (what, s.termination_text()))
            except StepFail as e:
                self.step(label, "FAIL", str(e))
        # unknown user: "P", nothing disclosed
        try:
            s = await self.connect()
            s.send(P_VerifyAccount, creds("nosuchuser_" + self.user[-6:], "x"))
            p = await s.reply(P_VerifyAccount, "P_VerifyAccount reply")
            self.check(p == b"P", "P_VerifyAccount for an unknown user", '"P" (50)', hexs(p))
            s.send(P_CreateAccount, creds(self.user, "other") + str8(obfuscate_email("x@y.z")))
            p = await s.reply(P_CreateAccount, "P_CreateAccount reply")
            self.check(p == b"N", "P_CreateAccount for an existing user", '"N" (4e)', hexs(p))
            # throttle: failures until close code 4 (the unknown user above was failure 1)
            replies = []
            for _ in range(6):
                if not s.alive():
                    break
                s.send(P_VerifyAccount, creds(self.user, "wrong password"))
                try:
                    replies.append((await s.reply(P_VerifyAccount, "P_VerifyAccount reply", timeout=3)).decode("latin-1"))
                except StepFail:
                    break
            await self.expect_close(s, 4, "five failed logins in 60 s")
            self.step("8e", "PASS", "unknown user \"P\", duplicate account \"N\", wrong-password replies %s then %s" % (
                replies, s.termination_text()))
        except StepFail as e:
            self.step("8e", "FAIL", str(e))

    def finish(self):
        fails = [r for r in self.results if r[1] == "FAIL"]
        if self.warnings:
            self.out("warnings (%d):" % len(self.warnings))
            for w in self.warnings:
                self.out("  - " + w)
        status = "FAIL" if fails or len([r for r in self.results if isinstance(r[0], int)]) < 7 else "PASS"
        self.out("%s: %s" % (status, ", ".join("%s=%s" % (n, st) for n, st, _ in self.results)))
        return 0 if status == "PASS" else 1


def floats(n):
    def f(s):
        v = [float(x) for x in s.split(",")]
        if len(v) != n:
            raise argparse.ArgumentTypeError("expected %d comma-separated numbers" % n)
        return v
    return f


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=25000)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per wait (default 10)")
    ap.add_argument("--world-dir", default=os.path.normpath(os.path.join(here, "..", "..", "shared", "worlds", "demo")),
                    help="world the server runs (native TOML dir or Realm Crafter Server Data dir), used to "
                         "find portals and expected positions (default: the demo world)")
    ap.add_argument("--no-world", action="store_true", help="do not read world data")
    ap.add_argument("--portal", type=floats(4), metavar="X,Y,Z,SIZE", help="portal to walk into (overrides world data)")
    ap.add_argument("--dest-area", help="area the --portal leads to")
    ap.add_argument("--return-portal", type=floats(4), metavar="X,Y,Z,SIZE", help="portal back, in the destination area")
    ap.add_argument("--via", help="prefer the portal leading to this area")
    ap.add_argument("--actor", type=int, help="template id to create the character from (default: first playable)")
    ap.add_argument("--step", type=float, default=4.0, help="units moved per 200 ms update (default 4)")
    ap.add_argument("--ack-change-area", action="store_true", help="send an empty P_ChangeArea ack after each one")
    ap.add_argument("--relogin-delay", type=float, default=1.0)
    ap.add_argument("--negative", action="store_true",
                    help="also run robustness checks: bad datagrams, NaN, speed clamp (5b), stream protocol "
                         "violations and the login throttle (8a-8e; run last, they trip the per-address throttle)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every packet")
    args = ap.parse_args()
    if args.no_world:
        args.world_dir = None
    if args.seed is not None:
        random.seed(args.seed)
    try:
        rc = asyncio.run(Run(args).main())
    except KeyboardInterrupt:
        rc = 130
    sys.exit(rc)


if __name__ == "__main__":
    main()
