/**
 * Topic names of the reference topology (../shared/BRIEF.md). Every topic is keyed by site but
 * `fetched`, keyed by payload digest so that exact duplicates meet in one parser partition.
 */
export const TOPICS = {
  links: 'links',
  fetchRequests: 'fetch-requests',
  fetchResults: 'fetch-results',
  fetched: 'fetched',
  parsedPages: 'parsed-pages',
  pageRecords: 'page-records',
  pageContent: 'page-content',
  control: 'control',
} as const;
