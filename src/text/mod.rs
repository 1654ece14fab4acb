//! What the page writes out as text: messages for people (`words`),
//! downloaded files' names (`file_name`), and the view as a link (`link`:
//! the URL codec and how the history follows the view).

pub mod file_name;
pub mod link;
pub mod words;
