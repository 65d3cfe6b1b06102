//! The `zone-node` binary.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("zone-node: the cluster runtime is not built yet (see issue 4)")
}
