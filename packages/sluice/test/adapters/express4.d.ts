// `express4` is Express 4 installed under an alias (package.json) so that both majors are tested;
// its API is typed closely enough by @types/express (which describes Express 5).
declare module 'express4' {
  import express from 'express';
  export default express;
}
