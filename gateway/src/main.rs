//! The `gateway` binary.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("gateway: not built yet (see issue 5)")
}
