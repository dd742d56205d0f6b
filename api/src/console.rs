//! What the console's pages and the server's own pages around it (login, single sign-on) share.

/// Where the console lives on the server; every page and asset URL starts with it.
pub const BASE: &str = "/console";

/// Applied before the page paints (inline in the document head), so a dark choice never flashes.
pub const THEME_SCRIPT: &str = "try{var t=localStorage.getItem('inmanta-theme');if(t)document.documentElement.setAttribute('data-theme',t)}catch(e){}";
