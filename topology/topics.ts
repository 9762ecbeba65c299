/** Topic names of the reference topology (../shared/BRIEF.md); every topic is keyed by site. */
export const TOPICS = {
  links: 'links',
  fetchRequests: 'fetch-requests',
  fetchResults: 'fetch-results',
  fetched: 'fetched',
  pageRecords: 'page-records',
  control: 'control',
} as const;
