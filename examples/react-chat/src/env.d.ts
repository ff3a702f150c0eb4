// esbuild loads stylesheets as text (build.ts): the server puts it in the page.
declare module "*.css" {
  const text: string;
  export default text;
}
