// SPDX-License-Identifier: GPL-2.0-or-later
// The main window: seven views over one snapshot (streams, region map, MSN chart, findings,
// shadow bytes, placement trace, timing), a worker thread for analysis with progress and Cancel (of
// a file, or of a live capture: File › Capture), and selection that follows a frame across the
// views.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <optional>

#include "live_analysis.h"
#include "snapshot.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QThread;
class QTreeView;

namespace ddpscope::gui {

class AnalysisWorker;
class BytesModel;
class BytesPage;
class PlacementTraceWidget;
class FindingsFilterProxy;
class FindingsModel;
class FindingsPage;
class MsnPage;
class RegionsPage;
class StreamsPage;
class TimingPage;
class ReplayPage;
class MsnChartWidget;
class RegionMapWidget;
class RegionTableModel;
class StreamTreeModel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum View {
    ViewStreams,
    ViewRegions,
    ViewMsn,
    ViewFindings,
    ViewBytes,
    ViewPlacement,
    ViewTiming,
    ViewReplay,
    ViewCount
  };
  static std::optional<View> parseView(const QString& name);  // "streams", "regions", ...

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Analyses in the background (progress bar, Cancel); views update with live snapshots.
  // `regions`: a regions file; by default the capture's sidecar NAME.regions.json if any.
  void openFile(const QString& path, const QString& regions = QString());
  // Analyses on the calling thread and shows the result (screenshots, tests).
  bool loadSynchronously(const QString& path, const QString& regions = QString());
  void applySnapshot(SnapshotPtr snap);
  const SnapshotPtr& snapshot() const { return snap_; }
  bool isAnalyzing() const { return running_job_ != 0; }

  // Starts a live capture on the worker thread (what File › Capture… does once its dialog is
  // accepted); the views follow it live. A bad filter is reported at once; other failures
  // (no permission, unknown interface) when the worker reports them. Errors show in a
  // message box (non-blocking) and in the status bar.
  void startCapture(const CaptureRequest& request);
  // Stops the capture; its analysis is finished as at the end of a file (analysisFinished).
  void stopCapture();
  bool isCapturing() const { return capturing_ && running_job_ != 0; }
  // Opens the capture dialog (File › Capture…).
  void captureDialog();
  // The last error shown to the user, or empty.
  const QString& lastError() const { return last_error_; }
  QString statusText() const;
  QString captureStatusText() const;
  // The last counters the capture reported (kernel stats present once the interface is open).
  const LiveStatus& liveStatus() const { return live_status_; }

  void showView(View v);
  QWidget* viewWidget(View v) const;
  // Selects the finding (row of FindingsModel) in the table, which focuses its frame.
  void selectFinding(int findingRow);
  // Focuses a frame in every view: stream tree, region map and bytes, MSN chart.
  void focusFrame(std::uint64_t frame, std::optional<std::uint32_t> stream = {},
                  int direction = -1);
  std::uint64_t focusedFrame() const { return focused_frame_; }
  // Focuses `frame` once the analysis under way (or the next one) has finished: the command
  // line's --frame N, which Wireshark's Tools › ddpscope menu passes.
  void focusFrameWhenLoaded(std::uint64_t frame) { pending_frame_ = frame; }
  // What "Open in Wireshark at this frame" runs (wireshark_launch.h); empty without a file.
  QStringList wiresharkArguments() const;
  void selectRegion(int region);
  // --port / --stream / --mid-stream-crc for the files opened from now on (as the CLI's).
  void setFileHints(FileHints hints) {
    file_hints_ = std::move(hints);
    updateSinkProfileActions();
  }
  // Tools › Data Sink Profile: the profile whose verdicts the findings show; a change analyses
  // the open file again (openFile), as the command line's --sink-profile does for the first.
  void setSinkProfile(SinkProfile p);
  const QList<QAction*>& sinkProfileActions() const { return sink_profile_actions_; }
  const FileHints& fileHints() const { return file_hints_; }

  StreamTreeModel* streamModel() const { return stream_model_; }
  FindingsModel* findingsModel() const { return findings_model_; }
  FindingsFilterProxy* findingsProxy() const { return findings_proxy_; }
  RegionTableModel* regionModel() const { return region_model_; }
  BytesModel* bytesModel() const { return bytes_model_; }
  BytesPage* bytesPage() const { return bytes_page_; }
  PlacementTraceWidget* placementTrace() const { return placement_; }
  QTreeView* streamsView() const { return streams_view_; }
  QTableView* findingsView() const { return findings_view_; }
  QTableView* regionsView() const { return regions_view_; }
  RegionMapWidget* regionMap() const { return region_map_; }
  MsnChartWidget* msnChart() const { return msn_chart_; }
  MsnPage* msnPage() const { return msn_page_; }
  FindingsPage* findingsPage() const { return findings_page_; }
  TimingPage* timingPage() const { return timing_page_; }
  ReplayPage* replayPage() const { return replay_page_; }
  QComboBox* seriesCombo() const { return series_combo_; }
  QAction* wiresharkAction() const { return wireshark_action_; }
  QAction* reloadAction() const { return reload_action_; }
  QAction* captureAction() const { return capture_action_; }
  QAction* stopCaptureAction() const { return stop_capture_action_; }

 signals:
  void analysisFinished();
  void startAnalysis(const QString& path, const QString& regions, quint64 job,
                     const ddpscope::gui::FileHints& hints);
  void startLiveCapture(const ddpscope::gui::CaptureRequest& request, quint64 job);

 protected:
  void dragEnterEvent(QDragEnterEvent* ev) override;
  void dropEvent(QDropEvent* ev) override;
  void closeEvent(QCloseEvent* ev) override;

 private:
  void buildUi();
  void buildMenus();
  void addRecent(const QString& path);
  void refreshRecentMenu();
  void updateSinkProfileActions();
  void updateActions();
  void populateSelectors();
  void onWorkerProgress(quint64 job, quint64 done, quint64 total, quint64 frames);
  void onWorkerSnapshot(quint64 job, SnapshotPtr snap);
  void onWorkerFinished(quint64 job, SnapshotPtr snap);
  void onWorkerLiveStatus(quint64 job, const LiveStatus& status);
  void setCaptureStatus(const LiveStatus& status);
  void showError(const QString& title, const QString& text);
  void cancelRunning();
  void openInWireshark();
  void exportBytes();
  void openDialog();
  void openRegionsDialog();

  SnapshotPtr snap_;
  QString path_;
  QString regions_path_;
  quint64 job_ = 0;
  quint64 running_job_ = 0;
  std::uint64_t focused_frame_ = 0;
  std::uint64_t pending_frame_ = 0;  // focusFrameWhenLoaded
  // The last capture's mid-stream hints, passed to Wireshark as Decode As.
  QList<quint16> capture_ports_;
  std::optional<bool> capture_crc_;
  FileHints file_hints_;
  bool capture_markers_ = false;
  bool syncing_ = false;
  bool capturing_ = false;  // the running job is a live capture
  QString last_error_;
  LiveStatus live_status_;

  QThread* thread_ = nullptr;
  AnalysisWorker* worker_ = nullptr;

  QTabWidget* tabs_ = nullptr;
  // The pages (one per view) and, for the accessors, their parts.
  StreamsPage* streams_page_ = nullptr;
  StreamTreeModel* stream_model_ = nullptr;
  QTreeView* streams_view_ = nullptr;
  RegionsPage* regions_page_ = nullptr;
  RegionTableModel* region_model_ = nullptr;
  QTableView* regions_view_ = nullptr;
  RegionMapWidget* region_map_ = nullptr;
  MsnPage* msn_page_ = nullptr;
  QComboBox* series_combo_ = nullptr;  // msn_page_'s
  MsnChartWidget* msn_chart_ = nullptr;
  FindingsModel* findings_model_ = nullptr;
  FindingsFilterProxy* findings_proxy_ = nullptr;
  QTableView* findings_view_ = nullptr;
  FindingsPage* findings_page_ = nullptr;
  BytesPage* bytes_page_ = nullptr;
  PlacementTraceWidget* placement_ = nullptr;
  BytesModel* bytes_model_ = nullptr;
  TimingPage* timing_page_ = nullptr;
  ReplayPage* replay_page_ = nullptr;

  QLabel* status_label_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QLabel* capture_label_ = nullptr;
  QAction* capture_action_ = nullptr;
  QAction* stop_capture_action_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QList<QAction*> sink_profile_actions_;  // Tools › Data Sink Profile, rfc then siw
  QAction* wireshark_action_ = nullptr;
  QAction* export_action_ = nullptr;
  QAction* reload_action_ = nullptr;
};

}  // namespace ddpscope::gui
