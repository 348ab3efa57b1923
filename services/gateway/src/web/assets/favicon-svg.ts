/**
 * The pages' icon, served as /assets/<hash>/favicon.svg (assets.ts) and linked from every page, so that browsers do
 * not ask for /favicon.ico (which would look like an organization's page): a conveyor belt's three green boxes.
 */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#14171a"/><rect x="4" y="12" width="7" height="7" rx="1" fill="#44cc11"/><rect x="12.5" y="12" width="7" height="7" rx="1" fill="#44cc11"/><rect x="21" y="12" width="7" height="7" rx="1" fill="#44cc11"/><rect x="3" y="21" width="26" height="3" rx="1.5" fill="#9f9f9f"/></svg>`;
