//! PLACEHOLDER until the trust module lands (same API).
/// Trust.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LastmodTrust {
    /// a
    pub agreements: u32,
    /// d
    pub disagreements: u32,
    /// i
    pub identical_sitemaps: u32,
    /// f
    pub future_lastmods: u32,
    /// o
    pub observations: u32,
}
impl LastmodTrust {
    /// fetch
    pub fn observe_fetch(&mut self, said: bool, found: bool) {
        self.observations += 1;
        if said == found {
            self.agreements += 1
        } else {
            self.disagreements += 1
        }
    }
    /// sitemap
    pub fn observe_sitemap(&mut self, _with: u64, _same: u64, _future: u64) {}
    /// trusted
    pub fn is_trusted(&self) -> bool {
        self.observations >= 5 && self.agreements * 5 >= self.observations * 4
    }
}
