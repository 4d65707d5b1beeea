; Inno Setup 6.3+ script for the Windows installer; packaging\build_windows.ps1 runs
;   ISCC /DAppVersion=<version> packaging\gpudesk.iss
; after PyInstaller has written dist\gpudesk\. Paths are relative to this file.
#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif

[Setup]
AppId={{5B7E2F0C-6A1D-4C8E-9F3B-2D4A6E8C1B90}
AppName=GPUDesk
AppVersion={#AppVersion}
AppPublisher=gpudesk
DefaultDirName={autopf}\GPUDesk
DefaultGroupName=GPUDesk
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\dist
OutputBaseFilename=gpudesk-{#AppVersion}-setup
SetupIconFile=..\resources\icons\gpudesk.ico
UninstallDisplayIcon={app}\gpudesk-gui.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Languages]
Name: "en"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\dist\gpudesk\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\GPUDesk"; Filename: "{app}\gpudesk-gui.exe"
Name: "{autodesktop}\GPUDesk"; Filename: "{app}\gpudesk-gui.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\gpudesk-gui.exe"; Description: "{cm:LaunchProgram,GPUDesk}"; Flags: nowait postinstall skipifsilent
